#pragma once
// The scheduler actor: the iteration loop. It keeps one step in flight per worker: colocated,
// a worker runs mixed steps; disaggregated, a prefill worker runs prefill chunks while a decode
// worker runs the decodes, both at once, over one KV pool. With several colocated workers (data
// parallel: [[engine.worker]] entries) each has a scheduler_core of its own over its own pool,
// and a request is placed on one at arrival (core/worker_choice.hpp); a worker in another
// process that is lost hands its requests to the others, and the engine fails only when none is
// left; it is asked to join again, and takes new requests once it has. Finished steps become events for each
// request's sink, records for metrics and queue accounting for admission. One policy and tenant table for
// all.

#include <memory>
#include <optional>

#include "actors/messages.hpp"
#include "core/config.hpp"
#include "core/engine_hooks.hpp"
#include "model/tokenizer.hpp"

namespace hearth {

struct engine_health;  // actors/supervisor.hpp

//! A worker as the scheduler drives it.
struct scheduler_worker {
  std::string name;  //!< "worker" or "worker tcp://HOST:PORT": how errors and stats name it
  worker_actor actor;
  worker_info info;
  //! In another process: watched here; when it is lost its requests move on, and it is asked to
  //! join again (actors/worker_rejoin.hpp).
  std::optional<worker_endpoint> endpoint = std::nullopt;
};

struct scheduler_options {
  engine_config config;
  const tokenizer* tok = nullptr;  //!< outlives the actor system
  //! Colocated: each one a data-parallel group of its own; disaggregated: the prefill worker.
  std::vector<scheduler_worker> workers;
  //! Disaggregated only: the decode worker (a pool of the prefill worker's layout and size).
  std::optional<scheduler_worker> decode = std::nullopt;
  //! Disaggregated with the decode side on another node and prefill here: the prefill worker's
  //! pool, whose blocks the scheduler reads into the decode steps (kv_blocks).
  std::weak_ptr<const kv_store> prefill_pool = {};
  join_hello hello;  //!< what a lost remote worker is joined again with
  admission_actor admission;
  metrics_actor metrics;
  keep_alive alive;                                   //!< pings from this loop (core/engine_hooks.hpp)
  std::function<void(const step&, double)> step_end;  //!< engine_hooks::step_end
  std::function<void(const std::string&)> worker_change = {};  //!< engine_hooks::worker_change
  //! Where the engine's failure is recorded (the supervisor's too); null in tests without one.
  std::shared_ptr<engine_health> health = nullptr;
};

scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_options opt);

}  // namespace hearth
