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

#include <atomic>
#include <memory>
#include <string>

#include <caf/all.hpp>

#include "actors/metrics_types.hpp"
#include "actors/worker.hpp"
#include "engine/config.hpp"
#include "engine/request.hpp"
#include "model/tokenizer.hpp"

namespace hearth {

class engine {
 public:
  //! Starts the actors and waits for the worker to be pinned and loaded. errc::invalid_argument
  //! for a bad configuration; the worker's error when its backend fails to load.
  static result<std::unique_ptr<engine>> start(const engine_config& cfg, std::shared_ptr<const tokenizer> tok,
                                                backend_factory make_backend);
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  //! Queues a request; its events go to `sink`. Returns the engine's id for it.
  request_id submit(request r, const caf::actor& sink);
  //! Cancels at the next step, whatever state the request is in. Unknown ids are ignored.
  void cancel(request_id id);
  //! Switches the scheduling policy between two steps; errc::invalid_argument for an unknown name.
  status<> set_policy(const std::string& name);
  //! Replaces the tenant table (a reload on SIGHUP or an admin request): quotas apply to the next
  //! request admitted, classes, weights, SLO targets and max_concurrent to the next step. Admitted
  //! requests keep their places; VTC counters and token buckets follow tenant names. Empty = no
  //! tenant configuration. errc::invalid_argument (and nothing changes) when check_tenants fails.
  status<> set_tenants(std::vector<tenant_config> tenants);
  scheduler_gauges gauges();
  metrics_snapshot metrics();
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

  caf::actor worker_, decode_worker_, metrics_, admission_, scheduler_;
  worker_info info_;
  engine_config cfg_;
  std::atomic<request_id> next_id_{1};
  bool stopped_ = false;
};

}  // namespace hearth
