// hearth bench serve: replays a household workload (or a trace) in open loop against a server
// (its own, or --server) through the ZeroMQ client or over HTTP (--via, or an http:// --server),
// and reports TTFT (with its split), ITL, TPOT,
// E2E, throughput, goodput and SLO attainment per tenant, the iterations beside the configured
// limits, and queue and KV gauges over time.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "bench/household/report.hpp"
#include "bench/household/runner.hpp"
#include "bench/household/split_target.hpp"
#include "bench/household/transport_report.hpp"
#include "cli/cmd_bench_household.hpp"
#include "cli/commands.hpp"
#include "common/text_file.hpp"
#include "policies/policy.hpp"

namespace hearth::cli {
namespace {

struct bench_serve_args {
  household_args h;
  std::string trace;
  std::string json_path;
  std::string served_out;
  double rate_scale = 1;
};

int run_bench_serve(const bench_serve_args& a) {
  if (auto st = check_server_options(a.h); !st) return fail(st.error().message);
  if (!a.served_out.empty() && (!a.h.server.empty() || !a.h.sim.empty()))
    return fail("--served-out records the bench's own server: not with --server or --sim");
  auto w = load_household_workload(a.h);
  if (!w) return fail(w.error().message);
  std::vector<household::trace_entry> trace;
  if (!a.trace.empty()) {
    auto t = household::load_trace(a.trace);
    if (!t) return fail(t.error().message);
    trace = std::move(*t);
  }
  auto file = open_model_file(a.h.model);
  if (!file) return fail(file.error().message);
  household_model m{std::move(*file), nullptr};
  // The schedule before the weights: a trace naming no class is told at once.
  household::schedule_builder builder(*w, m.tok(), m.n_ctx());
  auto s = trace.empty() ? builder.generate(a.rate_scale, w->duration_s) : builder.replay(trace);
  if (!s) return fail(s.error().message);
  if (auto st = m.load_backend(a.h); !st) return fail(st.error().message);
  const engine_config cfg = household_engine(a.h);
  // --via both: alternate requests of each class over the two gateways, then the same schedule
  // again on a fresh server with the gateways swapped, so each carries every request once.
  std::vector<std::vector<uint8_t>> lanes;
  if (a.h.via == "both") {
    lanes.push_back(household::alternate_lanes(s->cls));
    lanes.push_back(lanes[0]);
    for (uint8_t& l : lanes[1]) l = 1 - l;
  } else {
    lanes.push_back(a.h.via == "http" ? std::vector<uint8_t>(s->requests.size(), 1) : std::vector<uint8_t>{});
  }
  const bool bar = !a.h.no_progress && isatty(fileno(stderr));
  std::vector<household::run_result> runs;
  served_recorder served;
  for (const std::vector<uint8_t>& pass : lanes) {
    const auto t0 = std::chrono::steady_clock::now();
    // The header once the first run has begun: an error before it is the one line printed.
    auto header = [&] {
      if (!runs.empty()) return;
      std::fprintf(stderr, "hearth bench serve: %zu requests over %.0f s (%s), %s%s\n", s->requests.size(),
                   s->requests.empty() ? 0.0 : s->requests.back().at_s,
                   a.trace.empty() ? w->name.c_str() : a.trace.c_str(),
                   a.h.server.empty() ? household::describe(cfg).c_str() : a.h.server.c_str(),
                   a.h.via == "both" ? ", twice (the gateways swapped)"
                   : m.profile       ? (", simulated on " + a.h.sim).c_str()
                                     : "");
    };
    auto run = run_household(a.h, cfg, *w, m, *s,
                             {.lanes = pass,
                              .progress = bar ? stderr : nullptr,
                              .started = header,
                              .step_end = a.served_out.empty() ? nullptr : served.hook()});
    if (!run) return fail(run.error().message);
    served.add_requests(*run);
    runs.push_back(std::move(*run));
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (m.profile)
      std::fprintf(stderr, "hearth bench serve: simulated %zu requests in %.3f s (%.0f requests/s)\n",
                   s->requests.size(), wall_s,
                   static_cast<double>(s->requests.size()) / std::max(wall_s, 1e-9));
  }
  if (!a.served_out.empty()) {
    if (auto st = write_text_file(a.served_out, sim::to_json(served.take())); !st)
      return fail(st.error().message);
  }
  const auto report = household::make_report(*w, *s, runs[0]);
  household::print_report(report, stdout);
  const auto gateways = runs.size() < 2 ? std::vector<household::transport_figures>{}
                                        : household::compare_transports(runs, lanes, {"zmq", "http"});
  if (!gateways.empty()) household::print_transports(gateways, stdout);
  if (a.json_path.empty()) return 0;
  nlohmann::json config = household_config_json(a.h, *w);
  config["command"] = "serve";
  if (a.h.server.empty()) config["engine"] = household::to_json(cfg);
  config["rate_scale"] = a.rate_scale;
  config["trace"] = a.trace;
  config["requests"] = s->requests.size();
  config["via"] = a.h.via;
  nlohmann::json j = {{"config", config}, {"report", household::to_json(report, *w, runs[0])}};
  if (!gateways.empty()) {
    j["report_swapped"] = household::to_json(household::make_report(*w, *s, runs[1]), *w, runs[1]);
    j["gateways"] = household::to_json(gateways);
  }
  if (auto st = write_text_file(a.json_path, j.dump(1) + '\n'); !st) return fail(st.error().message);
  return 0;
}

}  // namespace

void add_bench_serve_command(CLI::App& bench, int& exit_code) {
  auto* cmd = bench.add_subcommand(
      "serve", "Replay a household workload in open loop; latency, goodput and SLOs per tenant");
  auto a = std::make_shared<bench_serve_args>();
  add_household_options(cmd, a->h);
  add_server_options(cmd, a->h);
  engine_config& e = a->h.engine;
  cmd->add_option("--trace", a->trace, "JSONL trace to replay instead of the workload's arrivals");
  cmd->add_option("--rate-scale", a->rate_scale, "Multiply every class's arrival rate")
      ->capture_default_str();
  cmd->add_option("--json", a->json_path, "Write every figure and the exact configuration to this file");
  cmd->add_option("--served-out", a->served_out,
                  "Write the steps the server ran and its requests' way in and out, for bench calibrate");
  cmd->add_option("--max-seqs", e.max_seqs, "Sequences per step")->capture_default_str();
  cmd->add_option("--max-batched-tokens", e.max_batched_tokens, "Tokens per step")->capture_default_str();
  cmd->add_option("--long-prefill-threshold", e.long_prefill_threshold, "Prefill chunk per request (0: none)")
      ->capture_default_str();
  cmd->add_option("--max-partial-prefills", e.max_partial_prefills,
                  "Chunks per step that leave their prompt unfinished")
      ->capture_default_str();
  cmd->add_option("--policy", e.policy, "Scheduling policy")
      ->check(CLI::IsMember(policy_names()))
      ->capture_default_str();
  cmd->add_option("--mode", a->h.mode, "Placement")
      ->check(CLI::IsMember({"colocated", "disaggregated"}))
      ->capture_default_str();
  cmd->callback([a, &exit_code] { exit_code = run_bench_serve(*a); });
}

}  // namespace hearth::cli
