// fcfs: first come, first served. Waiting requests in arrival order; the victim is the latest
// arrival, so the oldest request always keeps its blocks and always makes progress.
#include "policies/fcfs.hpp"

#include "policies/ordering.hpp"

namespace hearth {

using namespace policy_detail;

std::vector<uint32_t> fcfs_policy::order_waiting(const policy_snapshot& s) const {
  return order_by(s.waiting, same_rank);
}

uint32_t fcfs_policy::pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const {
  return last_by(s.running, candidates, same_rank);
}

}  // namespace hearth
