#pragma once
// The in-process engine API: submit a request, get its events (accepted, token..., and exactly
// one of done / cancelled / rejected / error) as `request_event` messages at a sink actor.
// Used by the gateway, the bench and the tests. Starting it spawns the actors:
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

#include <caf/all.hpp>

#include "actors/metrics_types.hpp"
#include "actors/worker.hpp"
#include "engine/config.hpp"
#include "engine/engine_hooks.hpp"
#include "engine/request.hpp"
#include "model/tokenizer.hpp"

namespace hearth {

struct engine_health;

class engine {
 public:
  //! Starts the actors and waits for the worker to be pinned and loaded. errc::invalid_argument
  //! for a bad configuration; the worker's error when its backend fails to load. `hooks`: a
  //! watchdog's pings and each request's end (engine/engine_hooks.hpp).
  static result<std::unique_ptr<engine>> start(const engine_config& cfg, std::shared_ptr<const tokenizer> tok,
                                               backend_factory make_backend, engine_hooks hooks = {});
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  //! Queues a request; its events go to `sink`. Returns the engine's id for it.
  request_id submit(request r, const caf::actor& sink);
  //! An id for a request submitted later with submit(id, ...) (the gateway tokenizes a long
  //! prompt first, and a cancel may name it meanwhile).
  request_id next_id() { return next_id_++; }
  void submit(request_id id, request r, const caf::actor& sink);
  //! A sink that calls `on_event` for every event it gets, one at a time on an actor thread:
  //! how a gateway hands events to its own threads. It lives until sent an exit.
  caf::actor spawn_sink(std::function<void(request_event&)> on_event);
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

  caf::actor_system& system() { return *system_; }
  const tokenizer& tok() const { return *tok_; }
  const worker_info& worker() const { return info_; }
  //! Disaggregated: how KV blocks reach the decode worker (automatic resolved to share or copy).
  kv_handoff_mode handoff() const { return cfg_.kv_handoff; }
  //! The configuration it started with (kv_handoff resolved). Policy and tenants are as started:
  //! set_policy and set_tenants do not change them here.
  const engine_config& config() const { return cfg_; }

 private:
  explicit engine(std::shared_ptr<const tokenizer> tok);

  std::shared_ptr<const tokenizer> tok_;  // before system_: the scheduler reads it until the system is gone
  caf::actor_system_config caf_cfg_;
  std::unique_ptr<caf::actor_system> system_;
  result<worker_info> await_ready(const caf::actor& worker);
  //! The error a request to a stopped actor becomes: the engine's failure when it has one.
  error failed(const caf::error& err) const;

  caf::actor worker_, decode_worker_, metrics_, admission_, scheduler_, supervisor_;
  std::shared_ptr<engine_health> health_;
  worker_info info_;
  engine_config cfg_;
  std::atomic<request_id> next_id_{1};
  bool stopped_ = false;
};

}  // namespace hearth
