#pragma once
// The scheduler actor: the iteration loop. It owns the scheduler_core (and with it the KV block
// manager) and keeps one step in flight per worker: colocated, one worker runs mixed steps;
// disaggregated, a prefill worker runs prefill chunks while a decode worker runs the decodes,
// both at once, over one KV pool. Finished steps become events for each request's sink, records
// for metrics and queue accounting for admission.

#include <memory>

#include "actors/messages.hpp"
#include "core/config.hpp"
#include "core/engine_hooks.hpp"
#include "model/tokenizer.hpp"

namespace hearth {

struct scheduler_options {
  engine_config config;
  const tokenizer* tok = nullptr;  //!< outlives the actor system
  uint32_t n_ctx = 0;
  uint32_t n_blocks = 0;
  uint32_t block_size = 0;
  worker_actor worker;         //!< colocated: the one worker; disaggregated: the prefill worker
  worker_actor decode_worker;  //!< disaggregated only
  admission_actor admission;
  metrics_actor metrics;
  keep_alive alive;                                   //!< pings from this loop (core/engine_hooks.hpp)
  std::function<void(const step&, double)> step_end;  //!< engine_hooks::step_end
};

scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_options opt);

}  // namespace hearth
