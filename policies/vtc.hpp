#pragma once
#include "policies/policy.hpp"

namespace hearth {

//! The cost of service in the Virtual Token Counter (Sheng et al., "Fairness in Serving Large
//! Language Models", OSDI '24): a tenant's counter grows by
//! (input * input_tokens + output * output_tokens) / weight as it is served. Output tokens cost
//! more because each takes a whole step's pass over the weights for one token.
struct vtc_cost {
  double input = 1;
  double output = 2;
};

//! vtc: waiting requests by their tenant's service counter (lowest first), FCFS within a
//! tenant; the order projects each pick's prefill onto its tenant's counter, so a step
//! interleaves tenants. The victim is the latest-arriving running request of the tenant with the
//! highest counter. The counters themselves (with the lift when a tenant becomes backlogged) are
//! kept by the engine (tenants/service_counters.hpp) and arrive in the snapshot.
class vtc_policy final : public policy {
 public:
  explicit vtc_policy(vtc_cost cost = {}) : cost_(cost) {}
  std::string_view name() const override { return "vtc"; }
  std::vector<uint32_t> order_waiting(const policy_snapshot& s) const override;
  uint32_t pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const override;

 private:
  vtc_cost cost_;
};

}  // namespace hearth
