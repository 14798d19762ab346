#pragma once
// What the policies share (internal to policies/): the tie-break every order ends with, the
// tenant of a request when no tenants are configured, and sorting requests by a key. Every
// order a policy returns is total and reproducible: equal keys fall back to arrival, then id.

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <functional>
#include <numeric>
#include <span>
#include <tuple>
#include <vector>

#include "policies/policy.hpp"

namespace hearth::policy_detail {

//! Rank of a class: interactive 0, standard 1, background 2 (lower is served first).
inline int class_rank(tenant_class c) {
  return static_cast<int>(c);
}

//! The tenant slot of `r`: its tenant_index, or 0 without tenant configuration, where every
//! request belongs to one default tenant (standard, weight 1, no SLO targets), so every policy
//! degrades to arrival order.
uint32_t tenant_slot(const policy_snapshot& s, const request_view& r);
//! The tenant in slot `t` (the default tenant without tenant configuration).
const tenant_view& tenant_at(const policy_snapshot& s, uint32_t t);
//! The tenant of `r`.
inline const tenant_view& tenant_of(const policy_snapshot& s, const request_view& r) {
  return tenant_at(s, tenant_slot(s, r));
}

//! Indices of `rs`, ascending by (key(r), arrival, id): most deserving first.
template <class Key>
std::vector<uint32_t> order_by(std::span<const request_view> rs, Key key) {
  std::vector<uint32_t> order(rs.size());
  std::iota(order.begin(), order.end(), 0u);
  std::ranges::sort(order, {}, [&](uint32_t i) { return std::tuple(key(rs[i]), rs[i].arrival_s, rs[i].id); });
  return order;
}

//! The element of `candidates` (indices into `rs`, not empty) with the greatest
//! (key(r), arrival, id): the least deserving, so the natural victim.
template <class Key>
uint32_t last_by(std::span<const request_view> rs, std::span<const uint32_t> candidates, Key key) {
  assert(!candidates.empty() && "pick_victim needs at least one candidate");
  return *std::ranges::max_element(
      candidates, {}, [&](uint32_t i) { return std::tuple(key(rs[i]), rs[i].arrival_s, rs[i].id); });
}

//! A key that ranks every request alike, leaving arrival order.
inline int same_rank(const request_view&) {
  return 0;
}

//! One tenant as the fair-share merge sees it while it projects the service of a step.
struct fair_tenant {
  double counter = 0;  //!< VTC counter, plus the prefill of the requests ordered so far
  double weight = 1;
  tenant_class cls = tenant_class::standard;
  bool backlogged = false;  //!< still has requests left to order
};

//! Ranks tenant `t` before its counter is compared (lower first), given every tenant's state.
using fair_group = std::function<int(uint32_t t, std::span<const fair_tenant> tenants)>;

//! Waiting requests in Virtual Token Counter order (Sheng et al., OSDI '24): repeatedly the
//! earliest waiting request of the backlogged tenant with the least (group, counter), whose
//! counter is then charged input_cost * (tokens to prefill) / weight. The charge is projected
//! within the order, so one step's order interleaves tenants as VTC would serve them instead
//! of handing every slot to whoever was lowest when the step began.
std::vector<uint32_t> fair_order(const policy_snapshot& s, double input_cost, const fair_group& group = {});

}  // namespace hearth::policy_detail
