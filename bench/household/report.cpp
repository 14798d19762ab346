#include "bench/household/report.hpp"

#include <algorithm>

namespace hearth::household {

namespace {

constexpr reject_reason all_reasons[] = {reject_reason::bad_request,   reject_reason::too_long,
                                         reject_reason::queue_full,    reject_reason::over_quota,
                                         reject_reason::shutting_down, reject_reason::internal};

const char* to_string(tenant_class c) {
  switch (c) {
    case tenant_class::interactive:
      return "interactive";
    case tenant_class::standard:
      return "standard";
    case tenant_class::background:
      return "background";
  }
  return "?";
}

nlohmann::json to_json(const length_dist& d) {
  switch (d.kind) {
    case length_kind::fixed:
      return {{"dist", "fixed"}, {"value", d.min}};
    case length_kind::uniform:
      return {{"dist", "uniform"}, {"min", d.min}, {"max", d.max}};
    case length_kind::lognormal:
      return {{"dist", "lognormal"}, {"mean", d.mean}, {"cv", d.cv}, {"min", d.min}, {"max", d.max}};
  }
  return {};
}

nlohmann::json rejected_json(const std::array<uint64_t, 7>& rejected) {
  nlohmann::json j = nlohmann::json::object();
  for (reject_reason why : all_reasons) {
    if (rejected[static_cast<size_t>(why)]) j[to_string(why)] = rejected[static_cast<size_t>(why)];
  }
  return j;
}

nlohmann::json to_json(const group_report& g) {
  return {
      {"name", g.name},
      {"slo", {{"ttft_ms", g.slo.ttft_ms}, {"itl_ms", g.slo.itl_ms}, {"itl_quantile", g.slo.itl_quantile}}},
      {"issued", g.issued},
      {"done", g.done},
      {"errors", g.errors},
      {"cancelled", g.cancelled},
      {"unfinished", g.unfinished},
      {"rejected", rejected_json(g.rejected)},
      {"met_slo", g.met_slo},
      {"attainment", g.attainment},
      {"goodput_rps", g.goodput},
      {"request_throughput_rps", g.request_throughput},
      {"prompt_throughput_tps", g.prompt_throughput},
      {"output_throughput_tps", g.output_throughput},
      {"prompt_tokens", g.prompt_tokens},
      {"output_tokens", g.output_tokens},
      {"preemptions", g.preemptions},
      {"ttft_ms", to_json(g.ttft_ms)},
      {"itl_ms", to_json(g.itl_ms)},
      {"tpot_ms", to_json(g.tpot_ms)},
      {"e2e_ms", to_json(g.e2e_ms)},
      {"ttft_split_ms",
       {{"queue", to_json(g.queue_ms)},
        {"prefill", to_json(g.prefill_ms)},
        {"first_step", to_json(g.first_step_ms)}}}};
}

nlohmann::json to_json(const server_figures& f) {
  nlohmann::json j = {{"limits",
                       {{"max_seqs", f.max_seqs},
                        {"max_batched_tokens", f.max_batched_tokens},
                        {"long_prefill_threshold", f.long_prefill_threshold},
                        {"policy", f.policy},
                        {"mode", f.mode}}},
                      {"preemptions", f.preemptions}};
  if (f.has_steps) {
    j["steps"] = {{"count", f.steps},
                  {"seqs", to_json(f.seqs)},
                  {"prefill_tokens", to_json(f.prefill_tokens)},
                  {"decode_tokens", to_json(f.decode_tokens)},
                  {"step_ms", to_json(f.step_ms)}};
  }
  return j;
}

nlohmann::json request_json(const bench_record& r, const workload& w) {
  const workload_class& c = w.classes[r.cls];
  nlohmann::json j = {{"index", r.index},
                      {"tenant", c.name},
                      {"arrival_s", r.arrival_s},
                      {"sent_s", r.sent_s},
                      {"end_s", r.end_s},
                      {"outcome", r.ended() ? to_string(r.kind) : "unfinished"},
                      {"prompt_tokens", r.prompt_tokens},
                      {"max_tokens", r.max_tokens},
                      {"output_tokens", r.token_s.size()},
                      {"preemptions", r.preemptions},
                      {"met_slo", meets_slo(r, {c.ttft_ms, c.itl_ms, w.itl_quantile})}};
  if (r.reason != reject_reason::none) j["reason"] = to_string(r.reason);
  if (!r.token_s.empty()) {
    j["ttft_ms"] = r.ttft_ms();
    j["server_ms"] = {{"queue", r.server.queue_ms},
                      {"prefill", r.server.prefill_ms},
                      {"first_step", r.server.first_step_ms},
                      {"ttft", r.server.ttft_ms}};
    j["gaps_ms"] = r.gaps_ms();
  }
  return j;
}

// One line per figure: mean, p50, p90, p99, max.
void print_dist(std::FILE* out, const char* label, const dist_summary& d) {
  if (d.count == 0) {
    std::fprintf(out, "  %-22s %9s\n", label, "-");
    return;
  }
  std::fprintf(out, "  %-22s %9.1f %9.1f %9.1f %9.1f %9.1f %8llu\n", label, d.mean, d.p50, d.p90, d.p99,
               d.max, static_cast<unsigned long long>(d.count));
}

}  // namespace

nlohmann::json to_json(const dist_summary& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"p50", d.p50},
          {"p90", d.p90},     {"p99", d.p99},   {"max", d.max}};
}

nlohmann::json to_json(const workload& w) {
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& c : w.classes) {
    nlohmann::json a = {{"rate", c.arrival.rate},
                        {"arrival", c.arrival.kind == arrival_kind::poisson ? "poisson" : "gamma"}};
    if (c.arrival.kind == arrival_kind::gamma) a["cv"] = c.arrival.cv;
    classes.push_back({{"name", c.name},
                       {"priority", to_string(c.priority)},
                       {"weight", c.weight},
                       {"arrival", a},
                       {"prompt", to_json(c.prompt)},
                       {"output", to_json(c.output)},
                       {"slo", {{"ttft_ms", c.ttft_ms}, {"itl_ms", c.itl_ms}}},
                       {"shared_prefix", c.shared_prefix},
                       {"seed", c.seed}});
  }
  return {{"name", w.name},
          {"duration_s", w.duration_s},
          {"drain_s", w.drain_s},
          {"itl_quantile", w.itl_quantile},
          {"classes", classes}};
}

nlohmann::json to_json(const engine_config& c) {
  return {{"max_batched_tokens", c.max_batched_tokens},
          {"max_seqs", c.max_seqs},
          {"long_prefill_threshold", c.long_prefill_threshold},
          {"max_partial_prefills", c.max_partial_prefills},
          {"max_preemptions", c.max_preemptions},
          {"policy", c.policy},
          {"max_waiting", c.max_waiting},
          {"max_waiting_tokens", c.max_waiting_tokens},
          {"mode", to_string(c.mode)},
          {"worker_cpus", c.worker_cpus},
          {"decode_cpus", c.decode_cpus},
          {"threads_per_worker", c.threads_per_worker}};
}

std::string describe(const engine_config& c) {
  return "seqs " + std::to_string(c.max_seqs) + ", tokens " + std::to_string(c.max_batched_tokens) +
         ", chunk " +
         (c.long_prefill_threshold ? std::to_string(c.long_prefill_threshold) : std::string("none")) +
         ", partial " + std::to_string(c.max_partial_prefills) + ", " + c.policy + ", " + to_string(c.mode);
}

bench_report make_report(const workload& w, const schedule& s, const run_result& r) {
  bench_report rep;
  std::vector<slo_target> slos;
  for (const auto& c : w.classes) slos.push_back({c.ttft_ms, c.itl_ms, w.itl_quantile});
  std::vector<const bench_record*> all;
  std::vector<const slo_target*> all_slo;
  for (const auto& rec : r.records) {
    all.push_back(&rec);
    all_slo.push_back(&slos[rec.cls]);
  }
  rep.overall = summarize_group("all", all, all_slo, r.duration_s);
  rep.overall.slo = {};
  for (uint32_t c = 0; c < w.classes.size(); ++c) {
    std::vector<const bench_record*> mine;
    for (const auto* rec : all) {
      if (rec->cls == c) mine.push_back(rec);
    }
    std::vector<const slo_target*> mine_slo(mine.size(), &slos[c]);
    rep.classes.push_back(summarize_group(w.classes[c].name, mine, mine_slo, r.duration_s));
    rep.classes.back().slo = slos[c];
  }
  rep.server = r.server;
  std::vector<double> waiting, running, kv;
  for (const auto& g : r.gauges) {
    waiting.push_back(g.g.waiting);
    running.push_back(g.g.running);
    kv.push_back(g.g.kv_total ? 100.0 * g.g.kv_used / g.g.kv_total : 0);
  }
  rep.waiting = summarize(waiting);
  rep.running = summarize(running);
  rep.kv_used_pct = summarize(kv);
  rep.duration_s = r.duration_s;
  rep.max_send_lag_ms = r.max_send_lag_ms;
  rep.clamped = s.clamped;
  return rep;
}

nlohmann::json to_json(const bench_report& r, const workload& w, const run_result& run) {
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& g : r.classes) classes.push_back(to_json(g));
  nlohmann::json series = nlohmann::json::array();
  for (const auto& g : run.gauges) {
    series.push_back({{"t_s", g.t_s},
                      {"waiting", g.g.waiting},
                      {"running", g.g.running},
                      {"kv_used", g.g.kv_used},
                      {"kv_total", g.g.kv_total}});
  }
  nlohmann::json requests = nlohmann::json::array();
  for (const auto& rec : run.records) requests.push_back(request_json(rec, w));
  return {{"duration_s", r.duration_s},
          {"max_send_lag_ms", r.max_send_lag_ms},
          {"clamped_to_context", r.clamped},
          {"overall", to_json(r.overall)},
          {"tenants", classes},
          {"server", to_json(r.server)},
          {"gauges",
           {{"waiting", to_json(r.waiting)},
            {"running", to_json(r.running)},
            {"kv_used_pct", to_json(r.kv_used_pct)},
            {"series", series}}},
          {"requests", requests}};
}

void print_report(const bench_report& r, std::FILE* out) {
  std::fprintf(out, "%-12s %6s %6s %5s %5s %5s %7s %9s %8s %10s %10s\n", "tenant", "issued", "done", "rej",
               "err", "unfin", "SLO %", "goodput/s", "req/s", "prompt t/s", "output t/s");
  auto row = [&](const group_report& g) {
    uint64_t rejected = 0;
    for (uint64_t n : g.rejected) rejected += n;
    std::fprintf(out, "%-12s %6llu %6llu %5llu %5llu %5llu %7.1f %9.3f %8.3f %10.1f %10.1f\n", g.name.c_str(),
                 static_cast<unsigned long long>(g.issued), static_cast<unsigned long long>(g.done),
                 static_cast<unsigned long long>(rejected),
                 static_cast<unsigned long long>(g.errors + g.cancelled),
                 static_cast<unsigned long long>(g.unfinished), 100 * g.attainment, g.goodput,
                 g.request_throughput, g.prompt_throughput, g.output_throughput);
  };
  for (const auto& g : r.classes) row(g);
  row(r.overall);
  std::fprintf(out, "\n  %-22s %9s %9s %9s %9s %9s %8s\n", "latency, ms", "mean", "p50", "p90", "p99", "max",
               "n");
  for (const auto* g : [&] {
         std::vector<const group_report*> v;
         for (const auto& c : r.classes) v.push_back(&c);
         v.push_back(&r.overall);
         return v;
       }()) {
    if (g->issued == 0) {
      std::fprintf(out, "%s: no requests\n", g->name.c_str());
      continue;
    }
    if (g == &r.overall) {
      std::fprintf(out, "all (each request judged by its class's SLO)\n");
    } else {
      std::fprintf(out, "%s (SLO: TTFT %.0f ms, ITL p%.0f %.0f ms)\n", g->name.c_str(), g->slo.ttft_ms,
                   100 * g->slo.itl_quantile, g->slo.itl_ms);
    }
    print_dist(out, "TTFT", g->ttft_ms);
    print_dist(out, " = queue wait", g->queue_ms);
    print_dist(out, " + prefill", g->prefill_ms);
    print_dist(out, " + first-token step", g->first_step_ms);
    print_dist(out, "ITL", g->itl_ms);
    print_dist(out, "TPOT", g->tpot_ms);
    print_dist(out, "E2E", g->e2e_ms);
  }
  const server_figures& f = r.server;
  std::fprintf(
      out,
      "\niterations: limits max_seqs %u, max_batched_tokens %u, long_prefill_threshold %u, policy %s, %s\n",
      f.max_seqs, f.max_batched_tokens, f.long_prefill_threshold, f.policy.c_str(), f.mode.c_str());
  if (f.has_steps) {
    std::fprintf(out, "  %-22s %9s %9s %9s %9s %9s %8s\n", "per iteration", "mean", "p50", "p90", "p99",
                 "max", "n");
    print_dist(out, "sequences", f.seqs);
    print_dist(out, "prefill tokens", f.prefill_tokens);
    print_dist(out, "decode tokens", f.decode_tokens);
    print_dist(out, "step time, ms", f.step_ms);
  }
  std::fprintf(out, "  %-22s %9s %9s %9s %9s %9s %8s\n", "over time", "mean", "p50", "p90", "p99", "max",
               "n");
  print_dist(out, "queue depth (waiting)", r.waiting);
  print_dist(out, "running", r.running);
  print_dist(out, "KV blocks used, %", r.kv_used_pct);
  std::fprintf(out, "preemptions %llu; rejections:", static_cast<unsigned long long>(r.overall.preemptions));
  bool any = false;
  for (reject_reason why : all_reasons) {
    if (const uint64_t n = r.overall.rejected[static_cast<size_t>(why)]) {
      std::fprintf(out, " %s %llu", to_string(why), static_cast<unsigned long long>(n));
      any = true;
    }
  }
  std::fprintf(out, "%s\nduration %.1f s; sender lag at most %.1f ms%s\n", any ? "" : " none", r.duration_s,
               r.max_send_lag_ms,
               r.clamped
                   ? (", " + std::to_string(r.clamped) + " requests shortened to the model's context").c_str()
                   : "");
}

}  // namespace hearth::household
