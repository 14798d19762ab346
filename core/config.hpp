#pragma once
// The engine's knobs: the step's token budget (Sarathi-Serve's chunked prefill), batch and queue
// limits, preemption bound, policy and placement. Defaults suit a 2-8 core home server.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "tenants/tenant_config.hpp"

namespace hearth {

enum class placement_mode : uint8_t { colocated, disaggregated };
//! How a finished prefill's KV blocks reach the decode worker: `share` (one pool, ownership
//! moves), `copy` (each worker has a pool in its own memory; the decode worker copies the blocks
//! in), or `automatic` (copy when the two cpusets lie on different NUMA nodes).
enum class kv_handoff_mode : uint8_t { automatic, share, copy };

//! What a worker in another process runs: `none`, colocated steps (data parallel); under mode =
//! "disaggregated", one side of the pair, the other running here unless another entry takes it.
enum class worker_role : uint8_t { none, prefill, decode };
//! "none", "prefill" or "decode".
const char* to_string(worker_role r);

//! Where a worker on another machine listens (`hearth worker --listen`, [[engine.worker]]).
struct worker_endpoint {
  std::string host;   //!< a name or an address; "" = every address (listening only)
  uint16_t port = 0;  //!< 0 = any free port (listening only)
  //! `hearth keygen --worker`'s folder: the channel runs over TLS, each end proving itself with
  //! it (actors/worker_credentials.hpp). "" = plain TCP, which only a loopback host may use.
  std::string credentials = {};
  worker_role role = worker_role::none;  //!< [[engine.worker]]'s `role`

  //! "tcp://HOST:PORT", as the user wrote it (brackets around an IPv6 address).
  std::string text() const;
  //! 127.0.0.0/8, ::1 or localhost: this machine alone can reach it.
  bool loopback() const;
  //! errc::invalid_argument for a host off this machine without credentials: a worker port is
  //! never open to anyone.
  status<> check_reach() const;
};

//! "tcp://HOST:PORT" (HOST an IPv6 address in brackets); `listening` also allows HOST `*` (every
//! address) and PORT 0 (any free one). errc::invalid_argument beginning with the text.
result<worker_endpoint> parse_worker_endpoint(std::string_view text, bool listening = false);

struct engine_config {
  // Step composition
  uint32_t max_batched_tokens = 256;      //!< tokens per step, decodes and prefill chunks together
  uint32_t max_seqs = 64;                 //!< sequences per step (and running at once)
  uint32_t long_prefill_threshold = 128;  //!< prefill tokens one request gets per step; 0 = no cap
  uint32_t max_partial_prefills = 2;      //!< chunks per step that leave their prompt unfinished
  uint32_t max_preemptions = 3;           //!< then a request reserves all its blocks and is never preempted
  std::string policy = "household";       // docs/policies.md: the default for a home server
  //! The household's services. Empty: no tenant configuration (every policy orders by arrival).
  std::vector<tenant_config> tenants = {};
  // Admission
  uint32_t max_waiting = 1024;            //!< requests queued and not yet started
  uint64_t max_waiting_tokens = 1 << 20;  //!< their prompt tokens
  // Placement: cpusets in hwloc list syntax ("0-3,8"); empty = no pinning
  placement_mode mode = placement_mode::colocated;
  std::string worker_cpus = {};  //!< colocated worker, or the prefill worker
  std::string decode_cpus = {};  //!< disaggregated: the decode worker
  kv_handoff_mode kv_handoff = kv_handoff_mode::automatic;
  uint32_t threads_per_worker = 0;  //!< 0 = one per cpu in its set (or all cores)
  //! [[engine.worker]]: workers in other processes (`hearth worker`), joined at start, each a
  //! data-parallel worker with its own pool (colocated steps); empty = the worker runs here. The
  //! cpusets and threads above are then the workers' own options, not these.
  std::vector<worker_endpoint> workers = {};
  //! With workers: one in this process too, beside them (its cpuset and threads the ones above).
  bool local_worker = false;
  // Supervision
  //! A step not back from its worker in this time means the backend hangs: the engine fails
  //! (actors/engine.hpp). A step is at most max_batched_tokens of work: well under a second on
  //! the models a home server runs, a few seconds for an 8B model's prefill chunk on 2 cores.
  uint32_t step_timeout_ms = 30000;
};

//! errc::invalid_argument for a worker listed twice, or two that name different credentials.
status<> check_workers(const std::vector<worker_endpoint>& workers);
//! errc::invalid_argument for roles that do not make one disaggregated pair (c.workers in order,
//! the first entry at fault named): a role outside mode = "disaggregated", an entry without one
//! inside it, two entries with one role, or kv_handoff = "share" with a side in another process
//! (a pool cannot be shared across nodes: a remote side always copies).
status<> check_roles(const engine_config& c);
//! The entry that runs that side in another process, or nullptr when it runs here.
const worker_endpoint* remote_side(const engine_config& c, worker_role side);
//! The credentials folder the workers' entries name ("" when none does): check() allows one.
std::string shared_credentials(const std::vector<worker_endpoint>& workers);

//! "colocated" or "disaggregated".
const char* to_string(placement_mode m);

//! errc::invalid_argument naming the first inconsistent field.
status<> check(const engine_config& c);

}  // namespace hearth
