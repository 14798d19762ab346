#pragma once
// What the policies share (internal to policies/): the tie-break every order ends with, the
// tenant of a request when no tenants are configured, and sorting requests by a key. Every
// order a policy returns is total and reproducible: equal keys fall back to arrival, then id.

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <numeric>
#include <span>
#include <tuple>
#include <vector>

#include "policies/policy.hpp"

namespace hearth::policy_detail {

//! Rank of a class: interactive 0, standard 1, background 2 (lower is served first).
inline int class_rank(tenant_class c) { return static_cast<int>(c); }

//! The tenant of `r`; without tenant configuration every request belongs to one default
//! tenant (standard, weight 1, no SLO targets), so every policy degrades to arrival order.
const tenant_view& tenant_of(const policy_snapshot& s, const request_view& r);

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
inline int same_rank(const request_view&) { return 0; }

}  // namespace hearth::policy_detail
