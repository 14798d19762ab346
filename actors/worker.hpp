#pragma once
// A worker: one detached actor (its own thread) that owns a backend and runs the steps it is
// sent. It pins its thread with hwloc, sets its kernel thread count, and only then loads the
// backend, so oneDNN's and our kernels' OpenMP teams start on its cpuset.

#include <functional>
#include <memory>
#include <string>

#include "actors/messages.hpp"
#include "actors/worker_info.hpp"

namespace hearth {

struct worker_options {
  std::string cpus;      //!< cpuset to pin to; "" = not pinned
  unsigned threads = 0;  //!< kernel threads; 0 = one per cpu of the set (all cpus when not pinned)
  backend_factory make_backend;
  const kv_store* copy_from = nullptr;  //!< KV handoff by copy: the prefill worker's pool
};

//! Spawns a worker. Ask it (ready_atom) for its worker_info before sending steps: the answer is
//! an error when pinning or loading failed.
worker_actor spawn_worker(caf::actor_system& sys, worker_options opt);

}  // namespace hearth
