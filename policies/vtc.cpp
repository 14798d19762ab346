// vtc: Virtual Token Counter fair share; see vtc.hpp and docs/policies.md.
#include "policies/vtc.hpp"

#include "policies/ordering.hpp"

namespace hearth {

using namespace policy_detail;

std::vector<uint32_t> vtc_policy::order_waiting(const policy_snapshot& s) const {
  return fair_order(s, cost_.input);
}

uint32_t vtc_policy::pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const {
  return last_by(s.running, candidates, [&](const request_view& r) { return tenant_of(s, r).service; });
}

}  // namespace hearth
