#pragma once
// The admission actor: the engine's front door. It checks each request before any expensive
// work (prompt and completion fit the context and the KV pool, tokens in the vocabulary,
// sampling parameters in range) and applies the queue limits, answering a refusal at once with
// a typed reason. Accepted requests go on to the scheduler, cancellations after them, in order.

#include <caf/fwd.hpp>

#include "engine/config.hpp"

namespace hearth {

struct admission_limits {
  uint32_t n_ctx = 0;
  uint32_t n_vocab = 0;
  uint64_t pool_tokens = 0;      //!< positions the KV pool holds
  uint32_t max_waiting = 0;
  uint64_t max_waiting_tokens = 0;
};

//! Spawns admission; it forwards to `scheduler` once told with (ready_atom, actor).
caf::actor spawn_admission(caf::actor_system& sys, admission_limits limits, caf::actor metrics);

}  // namespace hearth
