#pragma once
// The scheduling policy seam. A policy sees a read-only snapshot of the engine (waiting and
// running requests, the clock) and decides two things: the order in which waiting requests get
// prefill budget, and which running request gives up its KV blocks when the pool runs dry. It
// keeps no state between calls and does no I/O, so it is unit-testable in microseconds and can
// be switched between two steps.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/request.hpp"

namespace hearth {

//! One request as a policy sees it.
struct request_view {
  request_id id = 0;
  std::string_view tenant = {};
  double arrival_s = 0;            //!< engine clock, seconds
  uint32_t prompt_tokens = 0;
  uint32_t computed_tokens = 0;    //!< positions whose keys and values are cached
  uint32_t generated_tokens = 0;
  uint32_t blocks = 0;             //!< KV blocks held
  uint32_t preemptions = 0;
};

struct policy_snapshot {
  std::span<const request_view> waiting;  //!< not yet started, or preempted
  std::span<const request_view> running;  //!< holding KV blocks
  double now_s = 0;
};

class policy {
 public:
  virtual ~policy() = default;
  virtual std::string_view name() const = 0;
  //! Indices into s.waiting, most deserving first; every index exactly once.
  virtual std::vector<uint32_t> order_waiting(const policy_snapshot& s) const = 0;
  //! The request to preempt among s.running[candidates]: an element of `candidates` (never
  //! empty), chosen least deserving first.
  virtual uint32_t pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const = 0;
};

//! The policy called `name`, or nothing for an unknown name.
std::unique_ptr<policy> make_policy(std::string_view name);
//! The names make_policy knows.
std::vector<std::string> policy_names();

}  // namespace hearth
