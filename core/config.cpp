#include "core/config.hpp"

#include <string>

namespace hearth {

namespace {

error invalid(const std::string& what) {
  return error{errc::invalid_argument, "engine config: " + what};
}

}  // namespace

status<> check(const engine_config& c) {
  if (c.max_seqs == 0) return invalid("max_seqs must be >= 1");
  // Every running request gets its decode token in every step.
  if (c.max_batched_tokens < c.max_seqs) {
    return invalid("max_batched_tokens (" + std::to_string(c.max_batched_tokens) + ") must be >= max_seqs (" +
                   std::to_string(c.max_seqs) + ")");
  }
  if (c.max_partial_prefills == 0) return invalid("max_partial_prefills must be >= 1");
  if (c.max_waiting == 0) return invalid("max_waiting must be >= 1");
  if (c.step_timeout_ms == 0) return invalid("step_timeout_ms must be >= 1");
  if (c.mode == placement_mode::disaggregated && !c.worker_cpus.empty() && c.worker_cpus == c.decode_cpus) {
    return invalid("disaggregated workers need different cpusets");
  }
  if (auto st = check_tenants(c.tenants); !st) return invalid(st.error().message);
  return {};
}

const char* to_string(placement_mode m) {
  return m == placement_mode::colocated ? "colocated" : "disaggregated";
}

}  // namespace hearth
