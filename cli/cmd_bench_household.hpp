#pragma once
// What `hearth bench serve` and `hearth bench sweep` share: the workload (file or the shipped
// household mix) and trace, the model loaded once, and engines started from it for each run.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/worker.hpp"
#include "bench/household/engine_target.hpp"
#include "bench/household/report.hpp"
#include "bench/household/schedule.hpp"
#include "cli/common_options.hpp"

namespace hearth::cli {

struct household_args {
  std::string model;
  std::string workload;  //!< empty: the shipped household mix
  std::string mode = "colocated";
  compute_args compute;
  uint64_t kv_tokens = 16384;
  engine_config engine;
  double duration_s = 0;  //!< 0: the workload's
  double drain_s = -1;    //!< < 0: the workload's
  bool no_progress = false;
};

void add_household_options(CLI::App* cmd, household_args& a);

//! The model, loaded once: every engine of a sweep shares its converted weights and KV pool.
struct household_model {
  std::shared_ptr<const tokenizer> tok;
  uint32_t n_ctx = 0;
  std::shared_ptr<backend> prototype;
  backend_factory factory() const;
};

result<household::workload> load_household_workload(const household_args& a);
result<household_model> load_household_model(const household_args& a);
//! The engine configuration from the flags (mode resolved).
engine_config household_engine(const household_args& a);
//! The configuration as it goes into every JSON report.
nlohmann::json household_config_json(const household_args& a, const household::workload& w);

}  // namespace hearth::cli
