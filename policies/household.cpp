// household: class priority, VTC within a class, a guaranteed share for lower classes; see
// household.hpp and docs/policies.md.
#include "policies/household.hpp"

#include <limits>

#include "policies/stream_guard.hpp"

namespace hearth {

using namespace policy_detail;

namespace {

// Ranks a tenant whose counter lags every backlogged higher class by more than `lag` above all
// classes; otherwise its class rank.
int effective_rank(uint32_t t, std::span<const fair_tenant> tenants, double lag) {
  const int rank = class_rank(tenants[t].cls);
  double ahead = std::numeric_limits<double>::infinity();  // the lowest higher-class counter
  for (const fair_tenant& u : tenants)
    if (u.backlogged && class_rank(u.cls) < rank) ahead = std::min(ahead, u.counter);
  const bool starved = ahead != std::numeric_limits<double>::infinity() && tenants[t].counter + lag < ahead;
  return starved ? -1 : rank;
}

}  // namespace

std::vector<uint32_t> household_policy::order_waiting(const policy_snapshot& s) const {
  return fair_order(s, cost_.input, [this](uint32_t t, std::span<const fair_tenant> tenants) {
    return effective_rank(t, tenants, lag_);
  });
}

std::optional<uint32_t> household_policy::prefill_cap(const policy_snapshot& s) const {
  const request_view* first = s.waiting.empty() ? nullptr : &s.waiting[order_waiting(s).front()];
  return stream_guard_cap(s, first, min_prefill_tokens_);
}

uint32_t household_policy::pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const {
  return last_by(s.running, candidates, [&](const request_view& r) {
    const tenant_view& t = tenant_of(s, r);
    return std::pair(class_rank(t.cls), t.service);
  });
}

}  // namespace hearth
