#include "actors/engine.hpp"

#include <chrono>

#include "actors/admission.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"
#include "actors/placement.hpp"
#include "actors/scheduler.hpp"

namespace hearth {

namespace {

// One CAF thread runs admission, the scheduler and metrics: their work per step is small, and
// every extra thread would compete with the workers' kernel threads for the same cores.
constexpr size_t caf_threads = 1;

}  // namespace

engine::engine(std::shared_ptr<const tokenizer> tok) : tok_(std::move(tok)) {
  caf_cfg_.set("scheduler.max-threads", caf_threads);
  add_message_types(caf_cfg_);
  system_ = std::make_unique<caf::actor_system>(caf_cfg_);
}

result<std::unique_ptr<engine>> engine::start(const engine_config& cfg, std::shared_ptr<const tokenizer> tok,
                                              backend_factory make_backend) {
  if (auto st = check(cfg); !st) return st.error();
  if (!make_policy(cfg.policy)) return error{errc::invalid_argument, "engine config: unknown policy '" + cfg.policy + "'"};
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
  e->metrics_ = spawn_metrics(sys);
  e->admission_ = spawn_admission(
      sys, {w.n_ctx, w.n_vocab, uint64_t{w.n_blocks} * w.block_size, cfg.max_waiting, cfg.max_waiting_tokens},
      cfg.tenants, e->metrics_);
  e->scheduler_ = spawn_scheduler(sys, {resolved, e->tok_.get(), w.n_ctx, w.n_blocks, w.block_size, e->worker_,
                                        e->decode_worker_, e->admission_, e->metrics_});
  caf::anon_send(e->admission_, ready_atom::value, e->scheduler_);
  return e;
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
  for (const auto& a : {admission_, scheduler_, metrics_, worker_, decode_worker_}) {
    if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
  system_->await_all_actors_done();
}

request_id engine::submit(request r, const caf::actor& sink) {
  const request_id id = next_id_++;
  // Timed from here: TTFT includes admission and the messages before the scheduler.
  const int64_t now_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  caf::anon_send(admission_, submit_atom::value, id, std::move(r), sink, now_ns);
  return id;
}

void engine::cancel(request_id id) { caf::anon_send(admission_, cancel_atom::value, id); }

status<> engine::set_policy(const std::string& name) {
  caf::scoped_actor self{*system_};
  bool ok = false;
  self->request(scheduler_, caf::infinite, policy_atom::value, name).receive([&](bool b) { ok = b; }, [](caf::error&) {});
  if (!ok) return error{errc::invalid_argument, "unknown policy '" + name + "'"};
  return {};
}

status<> engine::set_tenants(std::vector<tenant_config> tenants) {
  if (auto st = check_tenants(tenants); !st) return st;
  caf::scoped_actor self{*system_};
  bool ok = true;
  // Admission first: a request it admits under the new quotas then meets the new table at the scheduler.
  for (const caf::actor& a : {admission_, scheduler_}) {
    self->request(a, caf::infinite, tenants_atom::value, tenants)
        .receive([&](bool b) { ok = ok && b; }, [&](caf::error&) { ok = false; });
  }
  if (!ok) return error{errc::invalid_argument, "tenants: the engine did not take the table (stopped?)"};
  return {};
}

scheduler_gauges engine::gauges() {
  caf::scoped_actor self{*system_};
  scheduler_gauges g;
  self->request(scheduler_, caf::infinite, gauges_atom::value).receive([&](scheduler_gauges& x) { g = x; }, [](caf::error&) {});
  return g;
}

metrics_snapshot engine::metrics() {
  caf::scoped_actor self{*system_};
  metrics_snapshot m;
  self->request(metrics_, caf::infinite, stats_atom::value).receive([&](metrics_snapshot& x) { m = std::move(x); },
                                                                   [](caf::error&) {});
  return m;
}

void engine::shutdown() {
  if (stopped_) return;
  stopped_ = true;
  caf::scoped_actor self{*system_};
  self->request(admission_, caf::infinite, drain_atom::value).receive([](bool) {}, [](caf::error&) {});
}

}  // namespace hearth
