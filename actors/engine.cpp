#include "actors/engine.hpp"

#include <chrono>

#include "actors/admission.hpp"
#include "actors/messages.hpp"
#include "actors/metrics.hpp"
#include "actors/placement.hpp"
#include "actors/scheduler.hpp"
#include "actors/supervisor.hpp"
#include "actors/worker.hpp"
#include "actors/worker_credentials.hpp"

namespace hearth {

namespace {

// A sink's behavior. Spawned with its callback as an argument: CAF 0.17 spawning a functor with
// no arguments binds a reference to a null std::tuple<> (UBSan reports it).
sink_actor::behavior_type sink_behavior(sink_actor::pointer, std::function<void(request_event&)> on_event) {
  return {[f = std::move(on_event)](request_event& e) { f(e); }};
}

}  // namespace

struct engine::actors {
  // `networked`: the worker runs in another process ([[engine.worker]]), reached through CAF's
  // middleman, which an engine of its own process does not start.
  actors(bool networked, const std::string& credentials)
      : system(configure_actor_system(cfg, networked, credentials)) {}

  caf::actor_system_config cfg;
  caf::actor_system system;
  worker_actor worker, decode_worker;          // this process's, when the model is loaded here
  std::vector<scheduler_worker> workers;       // every worker the scheduler drives
  std::optional<scheduler_worker> decode;      // disaggregated: the decode side, here or remote
  std::weak_ptr<const kv_store> prefill_pool;  // disaggregated, prefill here, decode remote
  metrics_actor metrics;
  admission_actor admission;
  scheduler_actor scheduler;
  supervisor_actor supervisor;

  // The error a request to a stopped actor becomes: the engine's failure when it has one.
  error failed(const engine_health& health, const caf::error& err) {
    const auto why = health.failure();
    return error{errc::io, "the engine has failed: " + (why ? *why : system.render(err))};
  }

  // Asks an actor from the calling thread and waits. The thread's reference to CAF's logger,
  // which a scoped actor takes, is dropped again: the actor system's destructor waits for every
  // one, and a gateway's thread may outlive the engine.
  template <class T, class Ask>
  result<T> ask(Ask&& how) {
    result<T> out = error{errc::io, "engine: no answer"};
    {
      caf::scoped_actor self{system};
      how(self, out);
    }
    caf::logger::set_current_actor_system(nullptr);
    return out;
  }
};

struct event_sink::actor {
  sink_actor handle;
};

event_sink::event_sink(std::unique_ptr<actor> a) : a_(std::move(a)) {}

event_sink::~event_sink() {
  caf::anon_send_exit(a_->handle, caf::exit_reason::user_shutdown);
}

engine::engine(std::shared_ptr<const tokenizer> tok, bool networked, const std::string& credentials)
    : tok_(std::move(tok)),
      actors_(std::make_unique<actors>(networked, credentials)),
      health_(std::make_shared<engine_health>()) {}

result<std::unique_ptr<engine>> engine::start(const engine_config& cfg, std::shared_ptr<const tokenizer> tok,
                                              backend_factory make_backend, engine_hooks hooks,
                                              backend_factory make_decode_backend, const join_hello& hello) {
  if (auto st = check(cfg); !st) return st.error();
  const bool own_decode_backend = static_cast<bool>(make_decode_backend);
  if (own_decode_backend && cfg.mode != placement_mode::disaggregated)
    return error{errc::invalid_argument,
                 "engine config: a decode backend of its own needs mode = \"disaggregated\""};
  if (own_decode_backend && cfg.kv_handoff == kv_handoff_mode::share) {
    return error{errc::invalid_argument,
                 "engine config: kv_handoff = \"share\" needs one backend for both workers; a decode backend "
                 "of its own (another device) takes \"copy\""};
  }
  if (!make_policy(cfg.policy))
    return error{errc::invalid_argument, "engine config: " + unknown_policy_message(cfg.policy)};
  const bool remote = !cfg.workers.empty();
  if (remote && hello.model_sha256.empty())
    return error{errc::invalid_argument, "engine: a remote worker needs the model file's hash to join"};
  for (const worker_endpoint& w : cfg.workers) {
    if (auto st = w.check_reach(); !st) return st.error();
    if (!w.credentials.empty()) {
      if (auto st = check_worker_credentials(credentials_in(w.credentials)); !st) return st.error();
    }
  }
  std::unique_ptr<engine> e(
      new engine(std::move(tok), remote, remote ? shared_credentials(cfg.workers) : ""));
  engine_config resolved = cfg;
  if (remote && cfg.mode == placement_mode::disaggregated) {
    if (auto st = e->start_split(resolved, std::move(make_backend), std::move(make_decode_backend), hello);
        !st)
      return st.error();
  } else {
    if (!remote || cfg.local_worker) {
      if (auto st = e->start_local(resolved, std::move(make_backend), std::move(make_decode_backend)); !st)
        return st.error();
    }
    if (auto st = e->join_remotes(cfg, hello); !st) return st.error();
  }
  e->info_ = e->actors_->workers.front().info;
  e->cfg_ = resolved;
  e->spawn_rest(std::move(hooks), hello);
  if (auto st = e->attach_remotes(); !st) return st.error();
  return e;
}

status<> engine::join_remotes(const engine_config& cfg, const join_hello& hello) {
  auto& a = *actors_;
  for (const worker_endpoint& w : cfg.workers) {
    auto joined = join_remote_worker(a.system, w, hello);
    if (!joined) return joined.error();
    a.workers.push_back({"worker " + w.text(), std::move(joined->first), std::move(joined->second), w});
  }
  return {};
}

status<> engine::attach_remotes() {
  auto& a = *actors_;
  const auto scheduler = caf::actor_cast<caf::actor>(a.scheduler);
  std::vector<scheduler_worker> all = a.workers;
  if (a.decode) all.push_back(*a.decode);
  for (const scheduler_worker& w : all) {
    if (!w.endpoint) continue;
    if (auto st = attach_remote_worker(a.system, w.actor, *w.endpoint, scheduler); !st) return st;
  }
  return {};
}

namespace {

// One block table indexes both sides' pools: they must hold the same blocks of the same bytes.
status<> same_pools(const scheduler_worker& prefill, const scheduler_worker& decode) {
  const worker_info &p = prefill.info, &d = decode.info;
  if (p.n_blocks == d.n_blocks && p.block_size == d.block_size && p.block_bytes == d.block_bytes) return {};
  auto pool = [](const worker_info& i) {
    return std::to_string(i.n_blocks) + " blocks of " + std::to_string(i.block_size) + " positions, " +
           std::to_string(i.block_bytes) + " bytes each";
  };
  return error{
      errc::invalid_argument,
      "engine: the " + prefill.name + "'s KV pool (" + pool(p) + ") and the " + decode.name + "'s (" +
          pool(d) +
          ") differ; the two sides need the same (kv_tokens and compute, or hearth worker's --kv-tokens "
          "and --compute)"};
}

}  // namespace

status<> engine::start_split(engine_config& cfg, backend_factory make_backend,
                             backend_factory make_decode_backend, const join_hello& hello) {
  auto& a = *actors_;
  cfg.kv_handoff = kv_handoff_mode::copy;  // check_roles refused "share"
  const worker_endpoint* remote[] = {remote_side(cfg, worker_role::prefill),
                                     remote_side(cfg, worker_role::decode)};
  std::optional<scheduler_worker> side[2];
  // A side here, its handle kept in `handle` for the supervisor and the shutdown.
  auto start_here = [&](int i, worker_actor& handle, worker_options opt) -> status<> {
    handle = spawn_worker(a.system, std::move(opt));
    auto info = await_worker(a.system, handle);
    if (!info) return info.error();
    side[i] = scheduler_worker{i == 0 ? "prefill worker" : "decode worker", handle, *info};
    return {};
  };
  // The side here loads first: a join reserves a remote worker for 10 s only until it is attached.
  if (!remote[0]) {
    auto pool = std::make_shared<std::weak_ptr<const kv_store>>();
    auto st = start_here(0, a.worker,
                         {cfg.worker_cpus, cfg.threads_per_worker, std::move(make_backend), nullptr, pool});
    if (!st) return st;
    a.prefill_pool = *pool;
  } else if (!remote[1]) {
    auto st = start_here(1, a.decode_worker,
                         {cfg.decode_cpus, cfg.threads_per_worker,
                          make_decode_backend ? std::move(make_decode_backend) : std::move(make_backend)});
    if (!st) return st;
  }
  for (int i = 0; i < 2; ++i) {
    if (!remote[i]) continue;
    auto joined = join_remote_worker(a.system, *remote[i], hello);
    if (!joined) return joined.error();
    side[i] = scheduler_worker{std::string(i == 0 ? "prefill" : "decode") + " worker " + remote[i]->text(),
                               std::move(joined->first), std::move(joined->second), *remote[i]};
  }
  if (auto st = same_pools(*side[0], *side[1]); !st) return st;
  a.workers = {std::move(*side[0])};
  a.decode = std::move(*side[1]);
  decode_info_ = a.decode->info;
  return {};
}

status<> engine::start_local(engine_config& cfg, backend_factory make_backend,
                             backend_factory make_decode_backend) {
  auto& a = *actors_;
  auto& sys = a.system;
  const bool own_decode_backend = static_cast<bool>(make_decode_backend);
  // The first worker loads the model. A decode worker (disaggregated) on the same NUMA nodes
  // shares its weights and KV pool, so a finished prefill hands its blocks over by ownership;
  // on other nodes it loads its own copy and copies the blocks in (KV handoff by copy).
  auto loaded = std::make_shared<backend*>(nullptr);
  backend_factory make_again = make_backend;
  a.worker =
      spawn_worker(sys, {cfg.worker_cpus, cfg.threads_per_worker,
                         [make = std::move(make_backend), loaded]() -> result<std::unique_ptr<backend>> {
                           auto b = make();
                           if (b) *loaded = b->get();
                           return b;
                         }});
  auto info = await_worker(sys, a.worker);
  if (!info) return info.error();
  a.workers.push_back({"worker", a.worker, *info});
  if (cfg.mode != placement_mode::disaggregated) return {};
  if (cfg.kv_handoff == kv_handoff_mode::automatic) {
    cfg.kv_handoff = !own_decode_backend && same_numa_nodes(cfg.worker_cpus, cfg.decode_cpus)
                         ? kv_handoff_mode::share
                         : kv_handoff_mode::copy;
  }
  worker_options decode{cfg.decode_cpus, cfg.threads_per_worker, [loaded] { return (*loaded)->share(); }};
  if (cfg.kv_handoff == kv_handoff_mode::copy) {
    // Its own weights and pool, loaded by its own (pinned) thread into its node's (or device's) memory.
    decode.make_backend = own_decode_backend ? std::move(make_decode_backend) : make_again;
    decode.copy_from = &(*loaded)->kv();
  }
  a.decode_worker = spawn_worker(sys, std::move(decode));
  auto decode_info = await_worker(sys, a.decode_worker);
  if (!decode_info) return decode_info.error();
  if (decode_info->n_blocks != info->n_blocks)
    return error{errc::invalid_argument,
                 "engine: the decode worker's pool holds " + std::to_string(decode_info->n_blocks) +
                     " blocks, the prefill worker's " + std::to_string(info->n_blocks)};
  a.decode = scheduler_worker{"decode worker", a.decode_worker, *decode_info};
  decode_info_ = std::move(*decode_info);
  return {};
}

// Once the workers are ready: the actors around them, configured by cfg_ and the workers' info.
void engine::spawn_rest(engine_hooks hooks, const join_hello& hello) {
  auto& a = *actors_;
  auto& sys = a.system;
  // A request must fit whichever worker it is placed on: the smallest pool bounds it.
  uint64_t pool_tokens = UINT64_MAX;
  for (const scheduler_worker& w : a.workers)
    pool_tokens = std::min(pool_tokens, uint64_t{w.info.n_blocks} * w.info.block_size);
  const worker_info& w = info_;
  a.metrics = spawn_metrics(sys, cfg_.tenants, std::move(hooks.request_end));
  a.admission =
      spawn_admission(sys, {w.n_ctx, w.n_vocab, pool_tokens, cfg_.max_waiting, cfg_.max_waiting_tokens},
                      cfg_.tenants, a.metrics);
  a.scheduler = spawn_scheduler(
      sys, {cfg_, tok_.get(), a.workers, a.decode, a.prefill_pool, hello, a.admission, a.metrics,
            std::move(hooks.alive), std::move(hooks.step_end), std::move(hooks.worker_change), health_});
  caf::anon_send(a.admission, ready_atom::value, a.scheduler);
  auto untyped = [](const auto& handle) { return caf::actor_cast<caf::actor>(handle); };
  std::vector<supervised> watched = {{"admission", untyped(a.admission)},
                                     {"scheduler", untyped(a.scheduler)},
                                     {"metrics", untyped(a.metrics)}};
  // A worker in another process is the scheduler's to watch: when it is lost, the others take
  // its requests.
  for (const scheduler_worker& wk : a.workers)
    if (!wk.endpoint) watched.push_back({wk.name, untyped(wk.actor)});
  if (a.decode_worker) watched.push_back({"decode worker", untyped(a.decode_worker)});
  a.supervisor = spawn_supervisor(sys, std::move(watched), a.scheduler, health_);
}

std::unique_ptr<event_sink> engine::open_sink(std::function<void(request_event&)> on_event) {
  auto a = std::make_unique<event_sink::actor>();
  a->handle = actors_->system.spawn(sink_behavior, std::move(on_event));
  return std::unique_ptr<event_sink>(new event_sink(std::move(a)));
}

engine::~engine() {
  shutdown();
  health_->stopping();
  const actors& a = *actors_;
  auto stop = [](const auto& x) {
    if (x) caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
  };
  // Workers in other processes outlive this engine: they wait for the next server to join.
  stop(a.supervisor), stop(a.admission), stop(a.scheduler), stop(a.metrics), stop(a.decode_worker),
      stop(a.worker);
  actors_->system.await_all_actors_done();
}

request_id engine::submit(request r, const event_sink& sink) {
  const request_id id = next_id();
  submit(id, std::move(r), sink);
  return id;
}

void engine::submit(request_id id, request r, const event_sink& sink) {
  if (auto why = health_->failure()) {
    request_event refused;
    refused.id = id;
    refused.kind = event_kind::rejected;
    refused.reason = reject_reason::internal;
    refused.message = "the engine has failed: " + *why;
    caf::anon_send(sink.a_->handle, std::move(refused));
    return;
  }
  // Timed from here: TTFT includes admission and the messages before the scheduler.
  const int64_t now_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  caf::anon_send(actors_->admission, submit_atom::value, id, std::move(r), sink.a_->handle, now_ns);
}

void engine::cancel(request_id id) {
  caf::anon_send(actors_->admission, cancel_atom::value, id);
}

status<> engine::set_policy(const std::string& name) {
  auto ok = actors_->ask<bool>([&](caf::scoped_actor& self, result<bool>& out) {
    out = false;
    self->request(actors_->scheduler, caf::infinite, policy_atom::value, name)
        .receive([&](bool b) { out = b; }, [](caf::error&) {});
  });
  if (!ok || !*ok) return error{errc::invalid_argument, unknown_policy_message(name)};
  return {};
}

status<> engine::set_tenants(std::vector<tenant_config> tenants) {
  if (auto st = check_tenants(tenants); !st) return st;
  auto ok = actors_->ask<bool>([&](caf::scoped_actor& self, result<bool>& out) {
    bool all = true;
    auto tell = [&](const auto& a) {
      self->request(a, caf::infinite, tenants_atom::value, tenants)
          .receive([&](bool b) { all = all && b; }, [&](caf::error&) { all = false; });
    };
    // Admission first: a request it admits under the new quotas then meets the new table at the
    // scheduler; metrics learns which names to count on their own.
    tell(actors_->admission), tell(actors_->scheduler), tell(actors_->metrics);
    out = all;
  });
  if (!ok || !*ok)
    return error{errc::invalid_argument, "tenants: the engine did not take the table (stopped?)"};
  return {};
}

result<scheduler_gauges> engine::gauges() {
  return actors_->ask<scheduler_gauges>([&](caf::scoped_actor& self, result<scheduler_gauges>& out) {
    self->request(actors_->scheduler, caf::infinite, gauges_atom::value)
        .receive([&](scheduler_gauges& g) { out = g; },
                 [&](caf::error& err) { out = actors_->failed(*health_, err); });
  });
}

result<metrics_snapshot> engine::metrics(const std::optional<std::string>& tenant) {
  return actors_->ask<metrics_snapshot>([&](caf::scoped_actor& self, result<metrics_snapshot>& out) {
    auto take = [&](metrics_snapshot& m) { out = std::move(m); };
    auto refused = [&](caf::error& err) { out = actors_->failed(*health_, err); };
    if (tenant)
      self->request(actors_->metrics, caf::infinite, stats_atom::value, *tenant).receive(take, refused);
    else
      self->request(actors_->metrics, caf::infinite, stats_atom::value).receive(take, refused);
  });
}

std::optional<std::string> engine::failure() const {
  return health_->failure();
}

void engine::on_failure(std::function<void(const std::string&)> listener) {
  health_->on_failure(std::move(listener));
}

void engine::shutdown() {
  if (stopped_) return;
  stopped_ = true;
  // Answered once admission has ended every request it holds; a stopped one has nothing to end.
  (void)actors_->ask<bool>([&](caf::scoped_actor& self, result<bool>&) {
    self->request(actors_->admission, caf::infinite, drain_atom::value)
        .receive([](bool) {}, [](caf::error&) {});
  });
}

}  // namespace hearth
