#pragma once
// A worker: one detached actor (its own thread) that owns a backend and runs the steps it is
// sent. It pins its thread with hwloc, sets its kernel thread count, and only then loads the
// backend, so oneDNN's and our kernels' OpenMP teams start on its cpuset.

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "actors/messages.hpp"
#include "actors/worker_info.hpp"
#include "core/config.hpp"

namespace hearth {

struct worker_options {
  std::string cpus;      //!< cpuset to pin to; "" = not pinned
  unsigned threads = 0;  //!< kernel threads; 0 = one per cpu of the set (all cpus when not pinned)
  backend_factory make_backend;
  const kv_store* copy_from = nullptr;  //!< KV handoff by copy: the prefill worker's pool
  //! Set on the worker's thread once its backend is loaded, before (ready) is answered: its KV
  //! pool, for reads beside its steps (blocks shipped to another node). Weak: the worker alone
  //! owns its backend, and frees it on its own thread when it stops.
  std::shared_ptr<std::weak_ptr<const kv_store>> pool_out = nullptr;
};

//! The bytes of blocks `ids` of `pool` (kv_bytes' layout); errc::invalid_argument for an id
//! outside it. Safe beside the owner's forward for blocks that forward does not write.
result<kv_bytes> read_kv_blocks(const kv_store& pool, const std::vector<uint32_t>& ids);
//! The same of a worker's pool (worker_options::pool_out); errc::io once that worker has stopped.
result<kv_bytes> read_kv_blocks(const std::weak_ptr<const kv_store>& pool, const std::vector<uint32_t>& ids);

//! Spawns a worker. Ask it (ready_atom) for its worker_info before sending steps: the answer is
//! an error when pinning or loading failed.
worker_actor spawn_worker(caf::actor_system& sys, worker_options opt);

//! Waits for a worker's answer to ready_atom: its worker_info, or the error it gave.
result<worker_info> await_worker(caf::actor_system& sys, const worker_actor& w);

//! Connects to a worker in another process (actors/worker_node.hpp) and joins it with `hello`:
//! errc::io when it cannot be reached, errc::invalid_argument with its refusal. A worker that
//! serves another server is asked again for a few seconds (that server may have died). Blocks.
result<std::pair<worker_actor, worker_info>> join_remote_worker(caf::actor_system& sys,
                                                                const worker_endpoint& at,
                                                                const join_hello& hello);

//! Then hands the joined worker the scheduler it serves, which it watches: once that is gone the
//! worker is free for the next server. errc::io when the worker no longer takes it.
status<> attach_remote_worker(caf::actor_system& sys, const worker_actor& w, const worker_endpoint& at,
                              const caf::actor& scheduler);

}  // namespace hearth
