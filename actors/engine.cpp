#include "actors/engine.hpp"

#include <chrono>

#include "actors/admission.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"
#include "actors/placement.hpp"
#include "actors/scheduler.hpp"
#include "actors/supervisor.hpp"

namespace hearth {

namespace {

// One CAF thread runs admission, the scheduler and metrics: their work per step is small, and
// every extra thread would compete with the workers' kernel threads for the same cores.
constexpr size_t caf_threads = 1;

}  // namespace

engine::engine(std::shared_ptr<const tokenizer> tok)
    : tok_(std::move(tok)), health_(std::make_shared<engine_health>()) {
  caf_cfg_.set("scheduler.max-threads", caf_threads);
  add_message_types(caf_cfg_);
  system_ = std::make_unique<caf::actor_system>(caf_cfg_);
}

result<std::unique_ptr<engine>> engine::start(const engine_config& cfg, std::shared_ptr<const tokenizer> tok,
                                              backend_factory make_backend, engine_hooks hooks) {
  if (auto st = check(cfg); !st) return st.error();
  if (!make_policy(cfg.policy))
    return error{errc::invalid_argument, "engine config: " + unknown_policy_message(cfg.policy)};
  std::unique_ptr<engine> e(new engine(std::move(tok)));
  auto& sys = *e->system_;
  // The first worker loads the model. A decode worker (disaggregated) on the same NUMA nodes
  // shares its weights and KV pool, so a finished prefill hands its blocks over by ownership;
  // on other nodes it loads its own copy and copies the blocks in (KV handoff by copy).
  auto loaded = std::make_shared<backend*>(nullptr);
  backend_factory make_again = make_backend;
  e->worker_ = spawn_worker(sys, {cfg.worker_cpus, cfg.threads_per_worker,
                                  [make = std::move(make_backend), loaded]() -> result<std::unique_ptr<backend>> {
                                    auto b = make();
                                    if (b) *loaded = b->get();
                                    return b;
                                  }});
  auto info = e->await_ready(e->worker_);
  if (!info) return info.error();
  e->info_ = std::move(*info);
  engine_config resolved = cfg;
  if (cfg.mode == placement_mode::disaggregated) {
    if (resolved.kv_handoff == kv_handoff_mode::automatic) {
      resolved.kv_handoff = same_numa_nodes(cfg.worker_cpus, cfg.decode_cpus) ? kv_handoff_mode::share : kv_handoff_mode::copy;
    }
    worker_options decode{cfg.decode_cpus, cfg.threads_per_worker, [loaded] { return (*loaded)->share(); }};
    if (resolved.kv_handoff == kv_handoff_mode::copy) {
      // Its own weights and pool, loaded by its own (pinned) thread into its node's memory.
      decode.make_backend = make_again;
      decode.copy_from = &(*loaded)->kv();
    }
    e->decode_worker_ = spawn_worker(sys, std::move(decode));
    auto decode_info = e->await_ready(e->decode_worker_);
    if (!decode_info) return decode_info.error();
    if (decode_info->n_blocks != e->info_.n_blocks) return error{errc::invalid_argument, "engine: the decode worker's pool differs"};
  }
  e->cfg_ = resolved;
  const auto& w = e->info_;
  e->metrics_ = spawn_metrics(sys, cfg.tenants, std::move(hooks.request_end));
  e->admission_ = spawn_admission(
      sys, {w.n_ctx, w.n_vocab, uint64_t{w.n_blocks} * w.block_size, cfg.max_waiting, cfg.max_waiting_tokens},
      cfg.tenants, e->metrics_);
  e->scheduler_ =
      spawn_scheduler(sys, {resolved, e->tok_.get(), w.n_ctx, w.n_blocks, w.block_size, e->worker_,
                            e->decode_worker_, e->admission_, e->metrics_, std::move(hooks.alive)});
  caf::anon_send(e->admission_, ready_atom::value, e->scheduler_);
  std::vector<supervised> watched = {{"admission", e->admission_},
                                     {"scheduler", e->scheduler_},
                                     {"metrics", e->metrics_},
                                     {"worker", e->worker_}};
  if (e->decode_worker_) watched.push_back({"decode worker", e->decode_worker_});
  e->supervisor_ = spawn_supervisor(sys, std::move(watched), e->scheduler_, e->health_);
  return e;
}

namespace {

// A sink's behavior. Spawned with its callback as an argument: CAF 0.17 spawning a functor with
// no arguments binds a reference to a null std::tuple<> (UBSan reports it).
caf::behavior sink_behavior(caf::event_based_actor*, std::function<void(request_event&)> on_event) {
  return {[f = std::move(on_event)](request_event& e) { f(e); }};
}

}  // namespace

caf::actor engine::spawn_sink(std::function<void(request_event&)> on_event) {
  return system_->spawn(sink_behavior, std::move(on_event));
}

result<worker_info> engine::await_ready(const caf::actor& worker) {
  caf::scoped_actor self{*system_};
  result<worker_info> out = error{errc::invalid_argument, "worker: no answer"};
  self->request(worker, caf::infinite, ready_atom::value)
      .receive([&](worker_info& info) { out = std::move(info); },
               [&](caf::error& err) { out = error{errc::invalid_argument, system_->render(err)}; });
  return out;
}

engine::~engine() {
  shutdown();
  health_->stopping();
  for (const auto& a : {supervisor_, admission_, scheduler_, metrics_, worker_, decode_worker_}) {
    if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
  system_->await_all_actors_done();
}

request_id engine::submit(request r, const caf::actor& sink) {
  const request_id id = next_id();
  submit(id, std::move(r), sink);
  return id;
}

void engine::submit(request_id id, request r, const caf::actor& sink) {
  if (auto why = health_->failure()) {
    request_event refused;
    refused.id = id;
    refused.kind = event_kind::rejected;
    refused.reason = reject_reason::internal;
    refused.message = "the engine has failed: " + *why;
    caf::anon_send(sink, std::move(refused));
    return;
  }
  // Timed from here: TTFT includes admission and the messages before the scheduler.
  const int64_t now_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  caf::anon_send(admission_, submit_atom::value, id, std::move(r), sink, now_ns);
}

void engine::cancel(request_id id) { caf::anon_send(admission_, cancel_atom::value, id); }

status<> engine::set_policy(const std::string& name) {
  caf::scoped_actor self{*system_};
  bool ok = false;
  self->request(scheduler_, caf::infinite, policy_atom::value, name).receive([&](bool b) { ok = b; }, [](caf::error&) {});
  if (!ok) return error{errc::invalid_argument, unknown_policy_message(name)};
  return {};
}

status<> engine::set_tenants(std::vector<tenant_config> tenants) {
  if (auto st = check_tenants(tenants); !st) return st;
  caf::scoped_actor self{*system_};
  bool ok = true;
  // Admission first: a request it admits under the new quotas then meets the new table at the
  // scheduler; metrics learns which names to count on their own.
  for (const caf::actor& a : {admission_, scheduler_, metrics_}) {
    self->request(a, caf::infinite, tenants_atom::value, tenants)
        .receive([&](bool b) { ok = ok && b; }, [&](caf::error&) { ok = false; });
  }
  if (!ok) return error{errc::invalid_argument, "tenants: the engine did not take the table (stopped?)"};
  return {};
}

result<scheduler_gauges> engine::gauges() {
  caf::scoped_actor self{*system_};
  result<scheduler_gauges> out = error{errc::io, "engine: no answer"};
  self->request(scheduler_, caf::infinite, gauges_atom::value)
      .receive([&](scheduler_gauges& g) { out = g; }, [&](caf::error& err) { out = failed(err); });
  return out;
}

result<metrics_snapshot> engine::metrics(const std::optional<std::string>& tenant) {
  caf::scoped_actor self{*system_};
  result<metrics_snapshot> out = error{errc::io, "engine: no answer"};
  auto take = [&](metrics_snapshot& m) { out = std::move(m); };
  auto refused = [&](caf::error& err) { out = failed(err); };
  if (tenant)
    self->request(metrics_, caf::infinite, stats_atom::value, *tenant).receive(take, refused);
  else
    self->request(metrics_, caf::infinite, stats_atom::value).receive(take, refused);
  return out;
}

std::optional<std::string> engine::failure() const {
  return health_->failure();
}

void engine::on_failure(std::function<void(const std::string&)> listener) {
  health_->on_failure(std::move(listener));
}

error engine::failed(const caf::error& err) const {
  const auto why = health_->failure();
  return error{errc::io, "the engine has failed: " + (why ? *why : system_->render(err))};
}

void engine::shutdown() {
  if (stopped_) return;
  stopped_ = true;
  caf::scoped_actor self{*system_};
  self->request(admission_, caf::infinite, drain_atom::value).receive([](bool) {}, [](caf::error&) {});
}

}  // namespace hearth
