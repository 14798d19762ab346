#pragma once
// `hearth bench sweep`: a grid of engine configurations, the baseline always among them, each
// with its goodput capacity (capacity.hpp) over multiples of the workload's rates. Written out
// as CSV (one row per trial, one per configuration) and SVG: the frontier (SLO attainment
// against total arrival rate, per configuration) and TTFT and ITL CDFs per tenant for the best
// configuration against the baseline, from their runs at the workload's own rates (the first
// trial of every search, so the same load for both).

#include <functional>
#include <string>
#include <vector>

#include "bench/household/capacity.hpp"
#include "bench/household/report.hpp"
#include "core/config.hpp"

namespace hearth::household {

struct sweep_grid {
  std::vector<uint32_t> max_seqs{64};
  std::vector<uint32_t> max_batched_tokens{256};
  std::vector<uint32_t> long_prefill_threshold{128};  //!< the chunk; 0 = no cap
  std::vector<uint32_t> max_partial_prefills{2};      //!< unfinished prompts chunked per step
  std::vector<std::string> policy{"fcfs"};
  std::vector<placement_mode> mode{placement_mode::colocated};
  std::string prefill_cpus = "0", decode_cpus = "1";  //!< the workers' cpusets when disaggregated
};

struct sweep_config {
  std::string name;
  engine_config cfg;
  bool baseline = false;
};

//! The baseline (fcfs, no chunking: a budget of longest_prompt + max_seqs tokens and no prefill
//! cap, colocated, the grid's first max_seqs) and then every combination of the grid; `base`
//! gives the other fields. Combinations equal to the baseline are left out, and so are those
//! check() refuses, each with its reason in `refused` when given.
std::vector<sweep_config> make_sweep_configs(const sweep_grid& grid, const engine_config& base,
                                             uint32_t longest_prompt,
                                             std::vector<std::string>* refused = nullptr);

//! One trial's outcome as the sweep keeps it.
struct sweep_trial {
  double rate = 0;  //!< total arrival rate, requests/s
  bench_report report;
  run_result run;  //!< kept only for the first trial (the CDFs)
};

struct sweep_config_result {
  sweep_config config;
  capacity_result capacity;
  std::vector<sweep_trial> trials;  //!< parallel to capacity.trials
  double ratio_to_baseline = 0;     //!< capacity / the baseline's (0 when the baseline's is 0)
};

struct sweep_result {
  std::vector<sweep_config_result> configs;  //!< the baseline first
  size_t best = 0;                           //!< highest capacity (the baseline on a tie)
  size_t trials = 0;                         //!< over every configuration
  double wall_s = 0;                         //!< the sweep's own time
};

//! Runs one trial of a configuration at a total rate; errors end the sweep. With `parallel`,
//! it is called from several threads at once (for different configurations).
using trial_runner = std::function<result<sweep_trial>(const sweep_config& c, double rate)>;

//! `parallel`: the configurations' searches run at once on every core (oneTBB), for trials
//! that do not share the machine's time (the simulator's); each search stays sequential, as its
//! next rate depends on the last. `log` is called from one thread at a time.
result<sweep_result> run_sweep(const std::vector<sweep_config>& configs, const search_options& search,
                               const trial_runner& run_trial,
                               const std::function<void(const std::string&)>& log, bool parallel = false);

//! The configuration's `[engine]` section as `hearth serve`'s file takes it (the knobs a sweep
//! varies, and the cpusets of a disaggregated one), under `comment` lines.
std::string engine_section(const engine_config& c, const std::string& comment);

std::string sweep_trials_csv(const sweep_result& s);
std::string sweep_capacity_csv(const sweep_result& s);
std::string frontier_svg(const sweep_result& s);
//! TTFT (itl = false) or ITL CDFs, one panel per tenant: the best configuration against the baseline.
std::string cdf_svg(const sweep_result& s, const workload& w, bool itl);
nlohmann::json to_json(const sweep_result& s);

}  // namespace hearth::household
