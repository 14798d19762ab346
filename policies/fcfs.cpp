// fcfs: first come, first served. Waiting requests in arrival order; the victim is the latest
// arrival, so the oldest request always keeps its blocks and always makes progress.
#include "policies/fcfs.hpp"

#include <algorithm>
#include <numeric>

namespace hearth {

namespace {

// Earlier arrival first; ids break ties, so the order is total and reproducible.
bool earlier(const request_view& a, const request_view& b) {
  return a.arrival_s < b.arrival_s || (a.arrival_s == b.arrival_s && a.id < b.id);
}

}  // namespace

std::vector<uint32_t> fcfs_policy::order_waiting(const policy_snapshot& s) const {
  std::vector<uint32_t> order(s.waiting.size());
  std::iota(order.begin(), order.end(), 0u);
  std::ranges::sort(order, [&](uint32_t a, uint32_t b) { return earlier(s.waiting[a], s.waiting[b]); });
  return order;
}

uint32_t fcfs_policy::pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const {
  return *std::ranges::max_element(candidates,
                                   [&](uint32_t a, uint32_t b) { return earlier(s.running[a], s.running[b]); });
}

}  // namespace hearth
