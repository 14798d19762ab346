#pragma once
#include "policies/policy.hpp"

namespace hearth {

//! priority: class order (interactive, standard, background) with aging, FCFS within a class.
//! A waiting request's rank is its class rank (0, 1, 2) minus the seconds it has waited divided
//! by `aging_s`: every aging_s seconds of waiting lift it by one class, so a background request
//! that has waited 2 * aging_s longer than a fresh interactive one goes first and nothing
//! starves. The victim is the least deserving running request: lowest class, latest arrival.
class priority_policy final : public policy {
 public:
  //! Seconds of waiting worth one class. 10 s: an interactive burst of a few seconds keeps its
  //! lead, while a background request never waits more than ~20 s behind fresh interactive work.
  static constexpr double default_aging_s = 10.0;

  explicit priority_policy(double aging_s = default_aging_s);
  std::string_view name() const override { return "priority"; }
  std::vector<uint32_t> order_waiting(const policy_snapshot& s) const override;
  uint32_t pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const override;

 private:
  double aging_s_;
};

}  // namespace hearth
