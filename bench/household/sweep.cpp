#include "bench/household/sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>

#include <tbb/parallel_for.h>

#include "bench/household/svg.hpp"

namespace hearth::household {

namespace {

bool same_knobs(const engine_config& a, const engine_config& b) {
  return a.max_seqs == b.max_seqs && a.max_batched_tokens == b.max_batched_tokens &&
         a.long_prefill_threshold == b.long_prefill_threshold &&
         a.max_partial_prefills == b.max_partial_prefills && a.policy == b.policy && a.mode == b.mode;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::vector<sweep_config> make_sweep_configs(const sweep_grid& grid, const engine_config& base,
                                             uint32_t longest_prompt, std::vector<std::string>* refused) {
  std::vector<sweep_config> out;
  engine_config b = base;
  b.max_seqs = grid.max_seqs.empty() ? base.max_seqs : grid.max_seqs.front();
  b.max_batched_tokens = longest_prompt + b.max_seqs;  // any prompt in one step, beside every decode
  b.long_prefill_threshold = 0;
  b.max_partial_prefills =
      grid.max_partial_prefills.empty() ? base.max_partial_prefills : grid.max_partial_prefills.front();
  b.policy = "fcfs";
  b.mode = placement_mode::colocated;
  out.push_back({"baseline: " + describe(b), b, true});
  for (uint32_t seqs : grid.max_seqs) {
    for (uint32_t tokens : grid.max_batched_tokens) {
      for (uint32_t chunk : grid.long_prefill_threshold) {
        for (uint32_t partial : grid.max_partial_prefills) {
          for (const std::string& policy : grid.policy) {
            for (placement_mode mode : grid.mode) {
              engine_config c = base;
              c.max_seqs = seqs;
              c.max_batched_tokens = tokens;
              c.long_prefill_threshold = chunk;
              c.max_partial_prefills = partial;
              c.policy = policy;
              c.mode = mode;
              if (mode == placement_mode::disaggregated) {
                c.worker_cpus = grid.prefill_cpus;
                c.decode_cpus = grid.decode_cpus;
              }
              if (same_knobs(c, b)) continue;
              if (auto st = check(c); !st) {
                if (refused) refused->push_back(describe(c) + ": " + st.error().message);
                continue;
              }
              out.push_back({describe(c), c, false});
            }
          }
        }
      }
    }
  }
  return out;
}

namespace {

// One configuration's capacity search; `log` is already serialised.
result<sweep_config_result> search_one(const sweep_config& c, const search_options& search,
                                       const trial_runner& run_trial,
                                       const std::function<void(const std::string&)>& log) {
  sweep_config_result r;
  r.config = c;
  std::optional<error> failed;
  r.capacity = find_capacity(
      [&](double rate) {
        if (failed) return 0.0;
        auto t = run_trial(c, rate);
        if (!t) {
          failed = t.error();
          return 0.0;
        }
        if (!r.trials.empty()) t->run = {};  // only the first run's records are plotted
        const double a = t->report.overall.attainment;
        log(c.name + ": " + fmt("%.3g", rate) + " req/s -> " + fmt("%.1f", 100 * a) + " % within SLO");
        r.trials.push_back(std::move(*t));
        return a;
      },
      search);
  if (failed) return error{failed->code, c.name + ": " + failed->message};
  log(c.name + ": capacity " + fmt("%.3g", r.capacity.capacity) + " req/s" +
      (r.capacity.bracketed ? "" : " (a lower bound)"));
  return r;
}

}  // namespace

result<sweep_result> run_sweep(const std::vector<sweep_config>& configs, const search_options& search,
                               const trial_runner& run_trial,
                               const std::function<void(const std::string&)>& log, bool parallel) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::mutex log_mu;
  size_t done = 0;
  auto say = [&](const std::string& line) {
    std::lock_guard lock(log_mu);
    log(line);
  };
  std::vector<std::optional<result<sweep_config_result>>> found(configs.size());
  auto one = [&](size_t i) {
    found[i] = search_one(configs[i], search, run_trial, say);
    // The sweep's own progress: configurations take about as long as each other.
    std::lock_guard lock(log_mu);
    const double n = static_cast<double>(configs.size()), d = static_cast<double>(++done), t = elapsed();
    log("sweep: " + fmt("%.0f", d) + " of " + fmt("%.0f", n) + " configurations (" +
        fmt("%.0f", 100 * d / n) + " %), " + fmt("%.0f", t) + " s so far, about " +
        fmt("%.0f", t / d * (n - d)) + " s left");
  };
  if (parallel)
    tbb::parallel_for(size_t{0}, configs.size(), one);
  else
    for (size_t i = 0; i < configs.size(); ++i) {
      one(i);
      if (!*found[i]) break;
    }
  sweep_result out;
  for (auto& f : found) {
    if (!f) break;  // after a failure, sequentially
    if (!*f) return f->error();
    out.trials += (*f)->trials.size();
    out.configs.push_back(std::move(**f));
  }
  const double base = out.configs.empty() ? 0 : out.configs.front().capacity.capacity;
  for (size_t i = 0; i < out.configs.size(); ++i) {
    auto& r = out.configs[i];
    r.ratio_to_baseline = base > 0 ? r.capacity.capacity / base : 0;
    if (r.capacity.capacity > out.configs[out.best].capacity.capacity) out.best = i;
  }
  out.wall_s = elapsed();
  return out;
}

std::string engine_section(const engine_config& c, const std::string& comment) {
  std::string s;
  for (size_t at = 0; at < comment.size();) {
    const size_t end = std::min(comment.find('\n', at), comment.size());
    s += "# " + comment.substr(at, end - at) + "\n";
    at = end + 1;
  }
  s += "[engine]\n";
  s += "policy = \"" + c.policy + "\"\n";
  s += std::string("mode = \"") + to_string(c.mode) + "\"\n";
  s += "max_seqs = " + std::to_string(c.max_seqs) + "\n";
  s += "max_batched_tokens = " + std::to_string(c.max_batched_tokens) + "\n";
  s += "long_prefill_threshold = " + std::to_string(c.long_prefill_threshold) + "\n";
  s += "max_partial_prefills = " + std::to_string(c.max_partial_prefills) + "\n";
  if (c.mode == placement_mode::disaggregated)
    s += "worker_cpus = \"" + c.worker_cpus + "\"\ndecode_cpus = \"" + c.decode_cpus + "\"\n";
  return s;
}

std::string sweep_trials_csv(const sweep_result& s) {
  std::string csv =
      "config,baseline,max_seqs,max_batched_tokens,long_prefill_threshold,max_partial_prefills,policy,mode,"
      "rate_rps,attainment,"
      "goodput_rps,"
      "ttft_p50_ms,ttft_p90_ms,itl_p50_ms,itl_p90_ms,e2e_p90_ms,done,issued\n";
  for (const auto& r : s.configs) {
    const engine_config& c = r.config.cfg;
    for (const auto& t : r.trials) {
      const group_report& g = t.report.overall;
      csv += "\"" + r.config.name + "\"," + (r.config.baseline ? "1," : "0,") + std::to_string(c.max_seqs) +
             "," + std::to_string(c.max_batched_tokens) + "," + std::to_string(c.long_prefill_threshold) +
             "," + std::to_string(c.max_partial_prefills) + "," + c.policy + "," + to_string(c.mode) + "," +
             fmt("%.6g", t.rate) + "," + fmt("%.4f", g.attainment) + "," + fmt("%.6g", g.goodput) + "," +
             fmt("%.1f", g.ttft_ms.p50) + "," + fmt("%.1f", g.ttft_ms.p90) + "," + fmt("%.1f", g.itl_ms.p50) +
             "," + fmt("%.1f", g.itl_ms.p90) + "," + fmt("%.1f", g.e2e_ms.p90) + "," +
             std::to_string(g.done) + "," + std::to_string(g.issued) + "\n";
    }
  }
  return csv;
}

std::string sweep_capacity_csv(const sweep_result& s) {
  std::string csv = "config,baseline,best,capacity_rps,bracketed,ratio_to_baseline,trials\n";
  for (size_t i = 0; i < s.configs.size(); ++i) {
    const auto& r = s.configs[i];
    csv += "\"" + r.config.name + "\"," + (r.config.baseline ? "1," : "0,") + (i == s.best ? "1," : "0,") +
           fmt("%.6g", r.capacity.capacity) + "," + (r.capacity.bracketed ? "1," : "0,") +
           fmt("%.4f", r.ratio_to_baseline) + "," + std::to_string(r.trials.size()) + "\n";
  }
  return csv;
}

std::string frontier_svg(const sweep_result& s) {
  chart c{"SLO attainment against arrival rate",
          "total arrival rate, requests/s",
          "requests within SLO",
          {},
          0,
          1,
          0.9};
  for (const auto& r : s.configs) {
    chart_series ser{r.config.name, {}, true};
    for (const auto& t : r.capacity.trials) ser.points.emplace_back(t.rate, t.attainment);
    std::ranges::sort(ser.points);
    c.series.push_back(std::move(ser));
  }
  return render_svg(std::span(&c, 1));
}

std::string cdf_svg(const sweep_result& s, const workload& w, bool itl) {
  std::vector<chart> panels;
  if (s.configs.empty()) return render_svg(panels);
  std::vector<const sweep_config_result*> shown{&s.configs.front()};
  if (s.best != 0) shown.push_back(&s.configs[s.best]);
  for (uint32_t cls = 0; cls < w.classes.size(); ++cls) {
    const workload_class& k = w.classes[cls];
    const double target = itl ? k.itl_ms : k.ttft_ms;
    chart c{"class " + k.name + (itl ? ": ITL" : ": TTFT"),
            itl ? "gap between tokens, ms" : "time to first token, ms",
            itl ? "share of gaps" : "share of requests",
            {},
            0,
            1,
            NAN};
    if (target > 0) {
      c.reference_x = target;
      c.reference_x_label = "target " + fmt("%g", target) + " ms";
    }
    std::vector<double> all;  // every series' samples: one axis for the panel
    for (const auto* r : shown) {
      if (r->trials.empty()) continue;
      std::vector<double> x;
      for (const bench_record& rec : r->trials.front().run.records) {
        if (rec.cls != cls || rec.token_s.empty()) continue;
        if (itl) {
          for (double g : rec.gaps_ms()) x.push_back(g);
        } else {
          x.push_back(rec.ttft_ms());
        }
      }
      all.insert(all.end(), x.begin(), x.end());
      c.series.push_back(
          {(r->config.baseline ? "baseline" : "best: " + r->config.name), cdf_points(std::move(x)), false});
    }
    c.x_end = cdf_axis_end(std::move(all), target);
    if (!std::isnan(c.x_end)) c.x_label += " (to the 99th percentile; the rest at the edge)";
    panels.push_back(std::move(c));
  }
  return render_svg(panels);
}

nlohmann::json to_json(const sweep_result& s) {
  nlohmann::json configs = nlohmann::json::array();
  for (size_t i = 0; i < s.configs.size(); ++i) {
    const auto& r = s.configs[i];
    nlohmann::json trials = nlohmann::json::array();
    for (const auto& t : r.trials) {
      nlohmann::json tenants = nlohmann::json::array();
      for (const auto& g : t.report.classes) {
        tenants.push_back({{"name", g.name},
                           {"attainment", g.attainment},
                           {"goodput_rps", g.goodput},
                           {"ttft_ms", to_json(g.ttft_ms)},
                           {"itl_ms", to_json(g.itl_ms)}});
      }
      const group_report& g = t.report.overall;
      trials.push_back({{"rate_rps", t.rate},
                        {"attainment", g.attainment},
                        {"goodput_rps", g.goodput},
                        {"issued", g.issued},
                        {"done", g.done},
                        {"ttft_ms", to_json(g.ttft_ms)},
                        {"itl_ms", to_json(g.itl_ms)},
                        {"tpot_ms", to_json(g.tpot_ms)},
                        {"e2e_ms", to_json(g.e2e_ms)},
                        {"preemptions", g.preemptions},
                        {"tenants", tenants},
                        {"steps",
                         {{"seqs", to_json(t.report.server.seqs)},
                          {"prefill_tokens", to_json(t.report.server.prefill_tokens)},
                          {"decode_tokens", to_json(t.report.server.decode_tokens)},
                          {"step_ms", to_json(t.report.server.step_ms)}}}});
    }
    configs.push_back({{"name", r.config.name},
                       {"baseline", r.config.baseline},
                       {"best", i == s.best},
                       {"engine", to_json(r.config.cfg)},
                       {"capacity_rps", r.capacity.capacity},
                       {"bracketed", r.capacity.bracketed},
                       {"ratio_to_baseline", r.ratio_to_baseline},
                       {"trials", trials}});
  }
  return {{"configs", configs}, {"best", s.configs.empty() ? "" : s.configs[s.best].config.name}};
}

}  // namespace hearth::household
