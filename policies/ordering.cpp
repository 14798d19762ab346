#include "policies/ordering.hpp"

#include <limits>

namespace hearth::policy_detail {

uint32_t tenant_slot(const policy_snapshot& s, const request_view& r) {
  if (s.tenants.empty()) return 0;
  assert(r.tenant_index < s.tenants.size() && "request_view::tenant_index outside policy_snapshot::tenants");
  return r.tenant_index;
}

const tenant_view& tenant_at(const policy_snapshot& s, uint32_t t) {
  static const tenant_view default_tenant{};
  return s.tenants.empty() ? default_tenant : s.tenants[t];
}

namespace {

// Positions a prefill must still compute: the prompt, plus generated tokens after a preemption.
uint32_t tokens_to_prefill(const request_view& r) {
  const uint32_t total = r.prompt_tokens + r.generated_tokens;
  return total > r.computed_tokens ? total - r.computed_tokens : 0;
}

// The backlogged tenant with the least (group, counter, arrival of its next request).
uint32_t next_tenant(const policy_snapshot& s, std::span<const fair_tenant> tenants,
                     const std::vector<std::vector<uint32_t>>& queues, const std::vector<size_t>& next,
                     const fair_group& group) {
  uint32_t best = std::numeric_limits<uint32_t>::max();
  auto key = [&](uint32_t t) {
    const request_view& head = s.waiting[queues[t][next[t]]];
    return std::tuple(group ? group(t, tenants) : 0, tenants[t].counter, head.arrival_s, head.id);
  };
  for (uint32_t t = 0; t < tenants.size(); ++t)
    if (tenants[t].backlogged && (best == std::numeric_limits<uint32_t>::max() || key(t) < key(best)))
      best = t;
  return best;
}

}  // namespace

std::vector<uint32_t> fair_order(const policy_snapshot& s, double input_cost, const fair_group& group) {
  const size_t n_tenants = std::max<size_t>(1, s.tenants.size());
  std::vector<std::vector<uint32_t>> queues(n_tenants);
  for (uint32_t i : order_by(s.waiting, same_rank)) queues[tenant_slot(s, s.waiting[i])].push_back(i);
  std::vector<fair_tenant> tenants(n_tenants);
  for (uint32_t t = 0; t < n_tenants; ++t) {
    const tenant_view& v = tenant_at(s, t);
    tenants[t] = {v.service, v.weight, v.cls, !queues[t].empty()};
  }
  std::vector<size_t> next(n_tenants, 0);
  std::vector<uint32_t> order;
  order.reserve(s.waiting.size());
  while (order.size() < s.waiting.size()) {
    const uint32_t t = next_tenant(s, tenants, queues, next, group);
    const uint32_t i = queues[t][next[t]++];
    order.push_back(i);
    tenants[t].counter += input_cost * tokens_to_prefill(s.waiting[i]) / tenants[t].weight;
    tenants[t].backlogged = next[t] < queues[t].size();
  }
  return order;
}

}  // namespace hearth::policy_detail
