#pragma once
// The in-process engine API: submit a request, get its events (accepted, token..., and exactly
// one of done / cancelled / rejected / error) as `request_event`s at a sink. Used by the
// gateways, the bench and the tests, none of which sees CAF: the actors live behind it. Starting it spawns
// the actors:
//
//   submit ─► admission ─► scheduler ◄─► worker (detached, pinned; backend + sampling)
//                              ▲
//                              └──────► decode worker (disaggregated mode)
//                 │            │  └──► sink: request_event ...
//                 └──► sink    └──► metrics
//
// Shutdown (shutdown() or the destructor) refuses new requests and ends every admitted one
// with error `shutting_down`, so no request is left without its terminal event.
//
// Supervision: a supervisor actor monitors every other one. If any of them stops (a backend
// step threw, a bug), or a step runs past engine_config::step_timeout_ms (a hung backend), the
// engine has failed for good: every request it holds ends with error `internal`, later ones are
// refused with it, and the failure listeners are told once. Nothing restarts inside the process:
// `hearth serve` exits non-zero and its service manager starts it afresh (docs/operations.md).

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "actors/metrics_types.hpp"
#include "actors/worker_info.hpp"
#include "actors/worker_join.hpp"
#include "core/config.hpp"
#include "core/engine_hooks.hpp"
#include "core/request.hpp"
#include "model/tokenizer.hpp"

namespace hearth {

struct engine_health;
class engine;

//! Where the events of the requests submitted with it go: its callback gets them one at a time,
//! on an actor thread, in order for each request. Made by engine::open_sink. Its destructor
//! closes it: no event is handed over after the one that may be running then (so what the
//! callback touches must outlive that one: the gateways give it shared state).
class event_sink {
 public:
  ~event_sink();
  event_sink(const event_sink&) = delete;
  event_sink& operator=(const event_sink&) = delete;

 private:
  friend class engine;
  struct actor;
  explicit event_sink(std::unique_ptr<actor> a);
  std::unique_ptr<actor> a_;
};

class engine {
 public:
  //! Starts the actors and waits for the worker to be pinned and loaded. errc::invalid_argument
  //! for a bad configuration; the worker's error when its backend fails to load. `hooks`: a
  //! watchdog's pings and each request's end (core/engine_hooks.hpp). `make_decode_backend`: in
  //! disaggregated mode, the decode worker's backend when it is another than the prefill worker's
  //! (another device): blocks are then handed over by copy; empty: the prefill worker's kind.
  //! With a worker in another process (cfg.workers), `make_backend` is not called: the engine
  //! joins that worker with `hello` (local_hello of the model file; actors/worker_join.hpp), and a
  //! worker that cannot be reached (errc::io) or refuses the join (errc::invalid_argument, naming
  //! what differs) fails the start.
  static result<std::unique_ptr<engine>> start(const engine_config& cfg, std::shared_ptr<const tokenizer> tok,
                                               backend_factory make_backend, engine_hooks hooks = {},
                                               backend_factory make_decode_backend = {},
                                               const join_hello& hello = {});
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  //! Queues a request; its events go to `sink`. Returns the engine's id for it.
  request_id submit(request r, const event_sink& sink);
  //! An id for a request submitted later with submit(id, ...) (the gateway tokenizes a long
  //! prompt first, and a cancel may name it meanwhile).
  request_id next_id() { return next_id_++; }
  void submit(request_id id, request r, const event_sink& sink);
  //! A sink whose callback `on_event` gets every event of the requests submitted with it: how a
  //! gateway, the bench and the tests hand events to their own threads.
  std::unique_ptr<event_sink> open_sink(std::function<void(request_event&)> on_event);
  //! Cancels at the next step, whatever state the request is in. Unknown ids are ignored.
  void cancel(request_id id);
  //! Switches the scheduling policy between two steps; errc::invalid_argument for an unknown name.
  status<> set_policy(const std::string& name);
  //! Replaces the tenant table (a reload on SIGHUP or an admin request): quotas apply to the next
  //! request admitted, classes, weights, SLO targets and max_concurrent to the next step. Admitted
  //! requests keep their places; VTC counters and token buckets follow tenant names. Empty = no
  //! tenant configuration. errc::invalid_argument (and nothing changes) when check_tenants fails.
  status<> set_tenants(std::vector<tenant_config> tenants);
  //! The scheduler's gauges; an error once the engine has failed.
  result<scheduler_gauges> gauges();
  //! Counters and latency summaries; `tenant` given: of that tenant alone (stats asks this, in
  //! time independent of how many names the engine has seen). An error once the engine has failed.
  result<metrics_snapshot> metrics(const std::optional<std::string>& tenant = std::nullopt);
  //! Why the engine failed, or nullopt while it works.
  std::optional<std::string> failure() const;
  //! Calls `listener` once, from an actor thread, when the engine fails (at once if it has).
  void on_failure(std::function<void(const std::string& why)> listener);
  //! Refuses new requests and ends every admitted one; idempotent.
  void shutdown();

  const tokenizer& tok() const { return *tok_; }
  const worker_info& worker() const { return info_; }
  //! The decode worker's, in disaggregated mode; nullptr otherwise.
  const worker_info* decode_worker() const { return decode_info_ ? &*decode_info_ : nullptr; }
  //! Disaggregated: how KV blocks reach the decode worker (automatic resolved to share or copy).
  kv_handoff_mode handoff() const { return cfg_.kv_handoff; }
  //! The configuration it started with (kv_handoff resolved). Policy and tenants are as started:
  //! set_policy and set_tenants do not change them here.
  const engine_config& config() const { return cfg_; }

 private:
  engine(std::shared_ptr<const tokenizer> tok, bool networked, const std::string& credentials);
  void spawn_rest(engine_hooks hooks, const join_hello& hello);
  // The worker (and, disaggregated, the decode worker) of this process; resolves cfg.kv_handoff.
  status<> start_local(engine_config& cfg, backend_factory make_backend, backend_factory make_decode_backend);
  // Joins every [[engine.worker]], then (once the scheduler exists) attaches it.
  status<> join_remotes(const engine_config& cfg, const join_hello& hello);
  status<> attach_remotes();
  // Disaggregated with a side (or both) in other processes ([[engine.worker]] role): the side
  // here, then the remote ones; both pools alike. Resolves cfg.kv_handoff (copy).
  status<> start_split(engine_config& cfg, backend_factory make_backend, backend_factory make_decode_backend,
                       const join_hello& hello);

  // The actor system and the actors: CAF stays behind this (engine.cpp), as oneDNN does behind
  // kernels/matmul.hpp.
  struct actors;
  std::shared_ptr<const tokenizer> tok_;  // before actors_: the scheduler reads it until the system is gone
  std::unique_ptr<actors> actors_;
  std::shared_ptr<engine_health> health_;
  worker_info info_;
  std::optional<worker_info> decode_info_;
  engine_config cfg_;
  std::atomic<request_id> next_id_{1};
  bool stopped_ = false;
};

}  // namespace hearth
