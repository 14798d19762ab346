#pragma once
#include "policies/policy.hpp"

namespace hearth {

class fcfs_policy final : public policy {
 public:
  std::string_view name() const override { return "fcfs"; }
  std::vector<uint32_t> order_waiting(const policy_snapshot& s) const override;
  uint32_t pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const override;
};

}  // namespace hearth
