// hearth bench sweep: the goodput capacity of each engine configuration of a grid (the baseline
// always among them) over multiples of the workload's rates; CSV, JSON and SVG plots in a folder.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "bench/household/runner.hpp"
#include "bench/household/sweep.hpp"
#include "cli/cmd_bench_household.hpp"
#include "cli/commands.hpp"
#include "common/text_file.hpp"
#include "policies/policy.hpp"

namespace hearth::cli {
namespace {

struct bench_sweep_args {
  household_args h;
  household::sweep_grid grid;
  std::vector<std::string> modes{"colocated"};
  std::string out_dir = "bench-sweep";
  household::search_options search{.start = 0, .target = 0.9, .resolution = 0.25, .max_runs = 5};
  // A trial's attainment is a share of its requests: at the household mix's rates (below one
  // request per second) a 30-second trial holds a dozen, too few to tell 85 % from 95 %.
  double min_requests = 50;
  bool quick = false;
};

int run_bench_sweep(bench_sweep_args& a) {
  if (a.quick) {
    if (a.h.duration_s <= 0) a.h.duration_s = 15;
    if (a.h.drain_s < 0) a.h.drain_s = 15;
    a.search.max_runs = std::min(a.search.max_runs, 4);
    a.min_requests = std::min(a.min_requests, 20.0);
  }
  if (a.h.duration_s <= 0) a.h.duration_s = 30;
  if (a.h.drain_s < 0) a.h.drain_s = 30;
  if (auto st = check_server_options(a.h); !st) return fail(st.error().message);
  auto w = load_household_workload(a.h);
  if (!w) return fail(w.error().message);
  auto file = open_model_file(a.h.model);
  if (!file) return fail(file.error().message);
  household_model m{std::move(*file), nullptr};
  if (auto st = m.load_backend(a.h); !st) return fail(st.error().message);
  a.grid.mode.clear();
  for (const auto& mode : a.modes) {
    a.grid.mode.push_back(mode == "disaggregated" ? placement_mode::disaggregated
                                                  : placement_mode::colocated);
  }
  uint32_t longest = 0;
  for (const auto& c : w->classes) longest = std::max(longest, std::min(c.prompt.max, m.n_ctx()));
  std::vector<std::string> refused;
  const auto configs = household::make_sweep_configs(a.grid, household_engine(a.h), longest, &refused);
  for (const auto& r : refused) std::fprintf(stderr, "hearth bench sweep: left out %s\n", r.c_str());
  if (a.search.start <= 0) a.search.start = w->total_rate();
  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec) return fail("cannot create " + a.out_dir + ": " + ec.message());
  std::fprintf(stderr,
               "hearth bench sweep: %zu configurations, at least %.0f s and %.0f requests of arrivals per "
               "trial, at most "
               "%d trials each\n",
               configs.size(), w->duration_s, a.min_requests, a.search.max_runs);

  household::schedule_builder builder(*w, m.tok(), m.n_ctx());
  const bool bar = !a.h.no_progress && isatty(fileno(stderr));
  auto trial = [&](const household::sweep_config& c, double rate) -> result<household::sweep_trial> {
    auto s = builder.generate(rate / w->total_rate(), std::max(w->duration_s, a.min_requests / rate));
    if (!s) return s.error();
    auto run = run_household(a.h, c.cfg, *w, m, *s, {.progress = bar ? stderr : nullptr});
    if (!run) return run.error();
    household::sweep_trial t;
    t.rate = rate;
    t.run = std::move(*run);
    t.report = household::make_report(*w, *s, t.run);
    return t;
  };
  // Simulated trials do not share the machine's time: every configuration searches at once.
  auto sweep = household::run_sweep(
      configs, a.search, trial, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); },
      m.profile.has_value());
  if (!sweep) return fail(sweep.error().message);
  std::printf("%zu trials in %.1f s (%.1f trials/s%s)\n", sweep->trials, sweep->wall_s,
              static_cast<double>(sweep->trials) / std::max(sweep->wall_s, 1e-9),
              m.profile ? ", simulated" : "");

  std::printf("%-64s %12s %10s\n", "configuration", "capacity/s", "x baseline");
  for (size_t i = 0; i < sweep->configs.size(); ++i) {
    const auto& r = sweep->configs[i];
    std::printf("%-64s %11.3f%s %10.2f%s\n", r.config.name.c_str(), r.capacity.capacity,
                r.capacity.bracketed ? " " : "+", r.ratio_to_baseline, i == sweep->best ? "  best" : "");
  }
  std::printf(
      "(capacity: the total arrival rate where the share of requests within SLO crosses %.0f %%, "
      "interpolated between trials; + a lower bound)\n",
      100 * a.search.target);
  nlohmann::json config = household_config_json(a.h, *w);
  config["command"] = "sweep";
  config["search"] = {{"start_rps", a.search.start},
                      {"target", a.search.target},
                      {"resolution", a.search.resolution},
                      {"max_runs", a.search.max_runs},
                      {"min_requests", a.min_requests}};
  const std::filesystem::path dir = a.out_dir;
  const auto& best = sweep->configs[sweep->best];
  char figures[96];
  std::snprintf(figures, sizeof figures, "capacity %.3g req/s (%.2f x the baseline)", best.capacity.capacity,
                best.ratio_to_baseline);
  const std::string why = "The best configuration of `hearth bench sweep`: " + best.config.name + ",\n" +
                          figures + " on " + a.h.model +
                          (m.profile ? ", simulated on " + a.h.sim : std::string()) +
                          ".\nPaste it into hearth serve's configuration file (docs/configuration.md).";
  for (const auto& [name, text] :
       {std::pair{"sweep.json",
                  nlohmann::json{{"config", config}, {"sweep", household::to_json(*sweep)}}.dump(1) + "\n"},
        std::pair{"trials.csv", household::sweep_trials_csv(*sweep)},
        std::pair{"capacity.csv", household::sweep_capacity_csv(*sweep)},
        std::pair{"frontier.svg", household::frontier_svg(*sweep)},
        std::pair{"ttft_cdf.svg", household::cdf_svg(*sweep, *w, false)},
        std::pair{"itl_cdf.svg", household::cdf_svg(*sweep, *w, true)},
        std::pair{"best.toml", household::engine_section(best.config.cfg, why)}}) {
    if (auto st = write_text_file((dir / name).string(), text); !st) return fail(st.error().message);
  }
  std::printf(
      "wrote %s/{sweep.json,trials.csv,capacity.csv,frontier.svg,ttft_cdf.svg,itl_cdf.svg,best.toml}\n",
      a.out_dir.c_str());
  return 0;
}

}  // namespace

void add_bench_sweep_command(CLI::App& bench, int& exit_code) {
  auto* cmd =
      bench.add_subcommand("sweep", "Goodput capacity of each configuration of a grid, against the baseline");
  auto a = std::make_shared<bench_sweep_args>();
  add_household_options(cmd, a->h);
  auto& g = a->grid;
  g.policy = {"fcfs", "household"};
  cmd->add_option("--max-seqs", g.max_seqs, "Grid: sequences per step")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--max-batched-tokens", g.max_batched_tokens, "Grid: tokens per step")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--long-prefill-threshold", g.long_prefill_threshold, "Grid: prefill chunk (0: none)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--max-partial-prefills", g.max_partial_prefills,
                  "Grid: unfinished prompts chunked per step")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--policy", g.policy, "Grid: scheduling policies")
      ->delimiter(',')
      ->check(CLI::IsMember(policy_names()))
      ->capture_default_str();
  cmd->add_option("--mode", a->modes, "Grid: placements")
      ->delimiter(',')
      ->check(CLI::IsMember({"colocated", "disaggregated"}))
      ->capture_default_str();
  cmd->add_option("--disagg-prefill-cpus", g.prefill_cpus, "Disaggregated: the prefill worker's cpuset")
      ->capture_default_str();
  cmd->add_option("--disagg-decode-cpus", g.decode_cpus, "Disaggregated: the decode worker's cpuset")
      ->capture_default_str();
  cmd->add_option("--start-rate", a->search.start, "First total rate tried, req/s (default: the workload's)");
  cmd->add_option("--target", a->search.target, "Share of requests within SLO a rate must reach")
      ->capture_default_str();
  cmd->add_option("--resolution", a->search.resolution, "Relative width of the final rate bracket")
      ->capture_default_str();
  cmd->add_option("--max-runs", a->search.max_runs, "Trials per configuration at most")
      ->capture_default_str();
  cmd->add_option("--min-requests", a->min_requests,
                  "Expected requests per trial at least: a trial's arrivals last max(duration, this / rate)")
      ->capture_default_str();
  cmd->add_option("-o,--out", a->out_dir, "Folder for sweep.json, CSV and SVG")->capture_default_str();
  cmd->add_flag("--quick", a->quick,
                "15 s trials, 15 s drain, 20 requests, at most 4 trials per configuration");
  cmd->callback([a, &exit_code] { exit_code = run_bench_sweep(*a); });
}

}  // namespace hearth::cli
