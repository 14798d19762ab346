// priority: class order with aging; see priority.hpp and docs/policies.md.
#include "policies/priority.hpp"

#include "policies/ordering.hpp"

namespace hearth {

using namespace policy_detail;

priority_policy::priority_policy(double aging_s) : aging_s_(aging_s) {
  assert(aging_s > 0 && "priority_policy: aging_s must be positive");
}

std::vector<uint32_t> priority_policy::order_waiting(const policy_snapshot& s) const {
  return order_by(s.waiting, [&](const request_view& r) {
    return class_rank(tenant_of(s, r).cls) - (s.now_s - r.arrival_s) / aging_s_;
  });
}

// Running requests are not aged: they already hold blocks, and the one that loses them is the
// one whose class matters least and that has invested least (latest arrival).
uint32_t priority_policy::pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const {
  return last_by(s.running, candidates,
                 [&](const request_view& r) { return class_rank(tenant_of(s, r).cls); });
}

}  // namespace hearth
