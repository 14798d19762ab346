// slo: earliest TTFT deadline first, decode protection; see slo.hpp and docs/policies.md.
#include "policies/slo.hpp"

#include "policies/stream_guard.hpp"

namespace hearth {

using namespace policy_detail;

std::vector<uint32_t> slo_policy::order_waiting(const policy_snapshot& s) const {
  return order_by(s.waiting, [&](const request_view& r) {
    const double deadline = deadline_of(s, r);
    if (deadline == no_target) return std::pair(2, r.arrival_s);
    return std::pair(can_make(s, r, deadline) ? 0 : 1, deadline);
  });
}

uint32_t slo_policy::pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const {
  return last_by(s.running, candidates, [&](const request_view& r) {
    const double itl_ms = tenant_of(s, r).itl_ms;
    return itl_ms > 0 ? itl_ms : no_target;
  });
}

std::optional<uint32_t> slo_policy::prefill_cap(const policy_snapshot& s) const {
  // The chunk is sized for the request this policy serves first.
  const request_view* first = s.waiting.empty() ? nullptr : &s.waiting[order_waiting(s).front()];
  return stream_guard_cap(s, first, min_prefill_tokens_);
}

}  // namespace hearth
