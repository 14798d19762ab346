#pragma once
// A bench workload: tenant classes, each with its arrival process, prompt and output lengths,
// SLO targets and seed, and how long the run lasts. Read from TOML (bench/README.md has the
// format); the household mix (bench/workloads/household.toml) is also compiled in, so the binary
// runs anywhere. Parsing is the edge where toml++'s exceptions end: every problem comes back as
// an error naming the source, the line, the class and the field.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/household/distributions.hpp"
#include "common/result.hpp"
#include "policies/policy.hpp"
#include "tenants/tenant_config.hpp"

namespace hearth::household {

struct workload_class {
  std::string name = {};                           //!< the tenant its requests run as
  tenant_class priority = tenant_class::standard;  //!< for the engine's tenant configuration
  double weight = 1;                               //!< fair-share weight, likewise
  arrival_process arrival;
  length_dist prompt, output;      //!< tokens (prompt: as the engine counts them, BOS included)
  double ttft_ms = 0, itl_ms = 0;  //!< SLO targets; 0 = none
  uint32_t shared_prefix = 0;      //!< leading prompt tokens every request of the class shares
  uint64_t seed = 1;
};

struct workload {
  std::string name = {};
  double duration_s = 60;     //!< arrivals happen in [0, duration_s)
  double drain_s = 60;        //!< then requests still running get this long to end
  double itl_quantile = 0.9;  //!< a request meets its ITL target when this quantile of its gaps does
  std::vector<workload_class> classes = {};

  const workload_class* find(std::string_view tenant) const;
  double total_rate() const;  //!< requests per second over all classes
};

//! The workload's classes as the engine's tenants (priority, weight, SLO targets), one each.
std::vector<tenant_config> tenants_of(const workload& w);

//! `source` names the text in errors (usually its path).
result<workload> parse_workload(std::string_view toml_text, std::string_view source = "workload");
result<workload> load_workload(const std::string& path);
//! The household mix that ships with Hearth (bench/workloads/household.toml, compiled in).
std::string_view default_workload_text();

}  // namespace hearth::household
