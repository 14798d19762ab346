#include "actors/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_map>

#include "actors/supervisor.hpp"
#include "actors/worker.hpp"
#include "actors/worker_rejoin.hpp"
#include "core/step_lanes.hpp"
#include "core/worker_choice.hpp"

namespace hearth {

namespace {

using clock_type = std::chrono::steady_clock;

// A lane's worker, and when its step in flight left (was planned, when its KV blocks ship first).
struct lane {
  worker_actor worker;
  std::string name;     // how a failure names it: "worker tcp://h:1", "decode worker"
  bool remote = false;  // in another process: watched here, not by the supervisor
  clock_type::time_point sent_at = {};
};

// A data-parallel group: a worker (or, disaggregated, a prefill and a decode worker over one
// pool), its decisions and the lanes they run on (lanes[i] is the loop's lane i).
struct group {
  std::string name;
  std::string device;
  std::optional<worker_endpoint> endpoint = std::nullopt;  // in another process
  bool lost = false;
  uint64_t generation = 0;  // which join of its worker a step's answer comes from
  std::unique_ptr<scheduler_core> core = {};
  std::optional<step_lanes> loop = {};
  std::vector<lane> lanes = {};
  // Disaggregated with a side on another node: a decode step carries its copy_in blocks' bytes.
  bool ship = false;
  double compute_ms = 0;
};

struct scheduler_state {
  scheduler_options opt;
  std::vector<group> groups;
  std::unordered_map<request_id, sink_actor> sinks;
  std::unordered_map<request_id, size_t> placed;  // each request's group
  uint64_t pool_tokens = UINT64_MAX;              // the smallest pool, which admission checks against
  clock_type::time_point epoch = clock_type::now();
  double compute_ms = 0, overhead_ms = 0;
  uint64_t kv_shipped_bytes = 0;
  double kv_ship_ms = 0;
  static inline const char* name = "scheduler";

  double now() const { return std::chrono::duration<double>(clock_type::now() - epoch).count(); }
};

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

// The bookkeeping the other actors need, then each event to its request's sink (after a terminal
// one the sink is forgotten). Metrics first: a request's record is in by the time its client
// hears of its end, so the client's next stats counts it.
void dispatch(self_ptr self, scheduler_core& core, std::vector<request_event>& events) {
  auto& st = self->state;
  if (auto dq = core.take_dequeued(); !dq.empty())
    self->send(st.opt.admission, dequeued_atom::value, std::move(dq));
  if (auto records = core.take_records(); !records.empty()) {
    std::vector<request_id> ids;
    std::vector<uint32_t> completion;
    for (const auto& r : records) {
      ids.push_back(r.id);
      completion.push_back(r.use.completion_tokens);
    }
    self->send(st.opt.admission, finished_atom::value, std::move(ids), std::move(completion));
    self->send(st.opt.metrics, records_atom::value, std::move(records));
  }
  for (auto& e : events) {
    const auto it = st.sinks.find(e.id);
    if (it == st.sinks.end()) continue;
    const bool last = e.terminal();
    self->send(it->second, std::move(e));
    if (last) {
      st.sinks.erase(it);
      st.placed.erase(e.id);
    }
  }
  events.clear();
}

scheduler_gauges gauges_of(const scheduler_state& st) {
  scheduler_gauges g;
  for (const group& gr : st.groups) {
    const scheduler_gauges c = gr.core->gauges();
    g.waiting += c.waiting, g.running += c.running, g.preemptions += c.preemptions, g.steps += c.steps;
    g.prefill_tokens += c.prefill_tokens, g.decode_tokens += c.decode_tokens;
    if (!gr.lost) g.kv.n_blocks += c.kv.n_blocks, g.kv.used += c.kv.used, g.kv.cached += c.kv.cached;
    g.kv.hits += c.kv.hits, g.kv.lookups += c.kv.lookups, g.kv.evictions += c.kv.evictions;
    for (const tenant_load& t : c.tenants) {
      auto it = std::ranges::find(g.tenants, t.tenant, &tenant_load::tenant);
      if (it == g.tenants.end()) it = g.tenants.insert(it, tenant_load{t.tenant});
      it->waiting += t.waiting, it->running += t.running;
    }
    g.workers.push_back({gr.name, gr.device, gr.lost, c.waiting, c.running, c.steps, c.kv.used, c.kv.n_blocks,
                         c.steps ? gr.compute_ms / static_cast<double>(c.steps) : 0.0});
  }
  g.compute_ms = st.compute_ms;
  g.overhead_ms = st.overhead_ms;
  g.kv_shipped_bytes = st.kv_shipped_bytes;
  g.kv_ship_ms = st.kv_ship_ms;
  return g;
}

void on_result(self_ptr self, size_t gi, uint64_t generation, size_t lane_index, step_result& r);

// The engine has failed (actors/engine.hpp): every request ends with `internal`, and the
// scheduler stops, so the supervisor reports the failure if it did not find it itself.
void fail(self_ptr self, const std::string& why) {
  // Recorded before any request ends, as the supervisor would record this actor's stop: a client
  // told `internal` that sends again must be refused at once, not admitted meanwhile.
  const caf::error reason = caf::make_error(caf::sec::runtime_error, why);
  if (self->state.opt.health) self->state.opt.health->fail(down_text(self->system(), "scheduler", reason));
  std::vector<request_event> events;
  for (group& g : self->state.groups) {
    g.core->drain(reject_reason::internal, why, self->state.now(), events);
    dispatch(self, *g.core, events);
  }
  self->quit(reason);
}

// Where a request goes: the live group that would finish it first.
std::optional<size_t> place(const scheduler_state& st, request_id id, const request& r) {
  std::vector<worker_load> loads;
  for (const group& g : st.groups)
    loads.push_back({.available = !g.lost,
                     .held = g.core->load(),
                     .cached_tokens = g.core->cached_tokens(r, id),
                     .speed = g.core->step_time()});
  return choose_worker(loads, static_cast<uint32_t>(r.prompt.size()), r.max_tokens);
}

// Sends lane i of group gi its step (the one in flight, with any shipped blocks in `s`).
void send_step(self_ptr self, size_t gi, uint64_t gen, size_t i, step s) {
  const uint64_t number = s.number;
  self->request(self->state.groups[gi].lanes[i].worker, caf::infinite, std::move(s))
      .then([=](step_result& r) { on_result(self, gi, gen, i, r); },
            [=](caf::error& err) {
              // A worker of this process stopped: the supervisor, which watches it, records
              // the engine's failure and then has every request ended (fail_atom).
              const lane& l = self->state.groups[gi].lanes[i];
              if (!l.remote) return;
              step_result r{.number = number, .error = l.name + ": " + error_text(self->system(), err)};
              on_result(self, gi, gen, i, r);
            });
}

// A decode step's blocks to copy in, in the order the worker writes them (step_runner).
std::vector<uint32_t> copy_ids(const step& s) {
  std::vector<uint32_t> ids;
  for (const step_seq& e : s.seqs) ids.insert(ids.end(), e.copy_in.begin(), e.copy_in.end());
  return ids;
}

// With a side on another node, the bytes of a decode step's copy_in blocks travel in it: read
// from the prefill pool here, or asked of the remote prefill worker (which reads them beside its
// next step: their request's decode step is in flight, so no prefill step writes them). The
// step leaves once they are in; a failed read fails it as a failed step would.
void ship_then_send(self_ptr self, size_t gi, uint64_t gen, size_t i) {
  group& g = self->state.groups[gi];
  const uint64_t number = g.loop->in_flight(i)->number;
  std::vector<uint32_t> ids = copy_ids(*g.loop->in_flight(i));
  const auto t0 = clock_type::now();
  auto go = [=](kv_bytes& bytes) {
    auto& st = self->state;
    const group& now = st.groups[gi];
    if (now.lost || now.generation != gen) return;
    st.kv_shipped_bytes += bytes.size();
    st.kv_ship_ms += std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    step s = *now.loop->in_flight(i);
    s.kv_blocks = std::move(bytes);
    send_step(self, gi, gen, i, std::move(s));
  };
  auto failed = [=](const std::string& why) {
    step_result r{.number = number, .error = why};
    on_result(self, gi, gen, i, r);
  };
  const lane& prefill = g.lanes.front();
  if (!prefill.remote) {
    auto bytes = read_kv_blocks(self->state.opt.prefill_pool, ids);
    bytes ? go(*bytes) : failed(bytes.error().message);
    return;
  }
  self->request(prefill.worker, caf::infinite, kv_read_atom::value, std::move(ids))
      .then([=](kv_bytes& bytes) { go(bytes); },
            [=](caf::error& err) { failed(prefill.name + ": " + error_text(self->system(), err)); });
}

// Starts a step on every idle worker for which something can run.
void kick(self_ptr self) {
  auto& st = self->state;
  for (size_t gi = 0; gi < st.groups.size(); ++gi) {
    group& g = st.groups[gi];
    if (g.lost) continue;
    for (size_t i : g.loop->start(*g.core, st.now())) {
      const step& s = *g.loop->in_flight(i);
      g.lanes[i].sent_at = clock_type::now();
      const uint64_t gen = g.generation;
      self->delayed_send(self, std::chrono::milliseconds(st.opt.config.step_timeout_ms), overdue_atom::value,
                         gi, i, gen, s.number);
      if (g.ship && std::ranges::any_of(s.seqs, [](const step_seq& e) { return !e.copy_in.empty(); }))
        ship_then_send(self, gi, gen, i);
      else
        send_step(self, gi, gen, i, s);
    }
  }
}

void on_result(self_ptr self, size_t gi, uint64_t generation, size_t lane_index, step_result& r) {
  auto& st = self->state;
  group& g = st.groups[gi];
  // Lost since: its requests moved on, and this step's work is redone elsewhere.
  if (g.lost || g.generation != generation) return;
  const auto received = clock_type::now();
  const double round_trip =
      std::chrono::duration<double, std::milli>(received - g.lanes[lane_index].sent_at).count();
  if (r.error.empty()) {
    const step& s = *g.loop->in_flight(lane_index);
    const uint32_t decode = s.n_tokens_decode();
    self->send(st.opt.metrics, stepped_atom::value,
               step_sample{static_cast<uint32_t>(s.seqs.size()), s.n_tokens() - decode, decode, round_trip});
    if (st.opt.step_end) st.opt.step_end(s, round_trip);
  }
  std::vector<request_event> events;
  g.loop->finish(lane_index, r, *g.core, st.now(), events);
  dispatch(self, *g.core, events);
  self->send(st.opt.metrics, gauges_atom::value, gauges_of(st));
  kick(self);
  // Overhead: the step's round trip beyond the worker's compute, plus the time from its result
  // to this worker's next step leaving.
  const double turn = std::chrono::duration<double, std::milli>(clock_type::now() - received).count();
  st.compute_ms += r.compute_ms;
  g.compute_ms += r.compute_ms;
  st.overhead_ms += std::max(0.0, round_trip - r.compute_ms) + (g.loop->in_flight(lane_index) ? turn : 0.0);
}

// A worker in another process is gone: its requests carry on at the others (recomputed, their
// draws the same), or, with none left, the engine fails with `why`.
void lose(self_ptr self, size_t gi, const std::string& why) {
  auto& st = self->state;
  group& g = st.groups[gi];
  if (g.lost) return;
  g.lost = true;
  if (std::ranges::none_of(st.groups, [](const group& x) { return !x.lost; })) {
    fail(self, why);
    return;
  }
  const auto moved = g.core->ids();
  if (st.opt.worker_change)
    st.opt.worker_change(why + "; " + std::to_string(moved.size()) +
                         " requests carry on at the other workers");
  std::vector<request_event> events;
  for (request_id id : moved) {
    const auto to = place(st, id, {});  // by load alone: its blocks are gone with its worker
    g.core->hand_over(id, *st.groups[*to].core, st.now(), events);
    st.placed[id] = *to;
  }
  dispatch(self, *g.core, events);
  spawn_rejoin(self->system(), *g.endpoint, st.opt.hello, self, gi);
  kick(self);
}

// The group whose lane runs on `worker` is lost for `reason` (a down message's, or a leave's).
void lose_worker(self_ptr self, const caf::actor_addr& worker, const caf::error& reason) {
  auto& gs = self->state.groups;
  for (size_t gi = 0; gi < gs.size(); ++gi)
    for (const lane& l : gs[gi].lanes)
      if (l.worker.address() == worker) {
        lose(self, gi, down_text(self->system(), l.name, reason));
        return;
      }
}

std::unique_ptr<scheduler_core> make_core(const scheduler_options& opt, const worker_info& info) {
  return std::make_unique<scheduler_core>(opt.config, *opt.tok, info.n_ctx, info.n_blocks, info.block_size,
                                          make_policy(opt.config.policy));
}

// A lost worker joined again: a group afresh (its pool, and with it the prefix cache, is new),
// unless its pool no longer holds what admission lets in.
void rejoined(self_ptr self, size_t gi, worker_actor& w, const worker_info& info) {
  auto& st = self->state;
  group& g = st.groups[gi];
  if (!g.lost) return;
  if (const uint64_t pool = uint64_t{info.n_blocks} * info.block_size; pool < st.pool_tokens) {
    if (st.opt.worker_change)
      st.opt.worker_change(g.name + " is back with a pool of " + std::to_string(pool) +
                           " positions, fewer than a request may hold (" + std::to_string(st.pool_tokens) +
                           "): not used");
    return;
  }
  g.core = make_core(st.opt, info);
  g.loop.emplace(placement_mode::colocated);
  g.lanes = {{std::move(w), g.name, true}};
  g.device = info.device;
  ++g.generation;
  g.lost = false;
  self->monitor(g.lanes.front().worker);
  if (st.opt.worker_change) st.opt.worker_change(g.name + " joined again");
  kick(self);
}

// The engine is alive when this loop runs and every step in flight is younger than the step
// timeout: past it the step is hung (and the overdue check fails the engine).
void on_alive_tick(self_ptr self) {
  auto& st = self->state;
  const auto limit = std::chrono::milliseconds(st.opt.config.step_timeout_ms);
  const auto now = clock_type::now();
  bool stuck = false;
  for (const group& g : st.groups)
    for (size_t i = 0; i < g.lanes.size() && !g.lost; ++i)
      stuck = stuck || (g.loop->in_flight(i) && now - g.lanes[i].sent_at > limit);
  if (!stuck) st.opt.alive.ping();
  self->delayed_send(self, st.opt.alive.every, alive_atom::value);
}

void make_groups(self_ptr self, const scheduler_options& opt) {
  auto& st = self->state;
  const bool disaggregated = opt.decode.has_value();
  for (const scheduler_worker& w : opt.workers) {
    group g{.name = w.name, .device = w.info.device, .endpoint = w.endpoint};
    g.core = make_core(opt, w.info);
    g.loop.emplace(disaggregated ? placement_mode::disaggregated : placement_mode::colocated);
    g.lanes = {{w.actor, w.name, w.endpoint.has_value()}};
    if (disaggregated)
      g.lanes.push_back({opt.decode->actor, opt.decode->name, opt.decode->endpoint.has_value()});
    g.ship = disaggregated && std::ranges::any_of(g.lanes, &lane::remote);
    for (const lane& l : g.lanes)
      if (l.remote) self->monitor(l.worker);
    st.groups.push_back(std::move(g));
    st.pool_tokens = std::min(st.pool_tokens, uint64_t{w.info.n_blocks} * w.info.block_size);
  }
  // A lost side of a disaggregated pair loses its group, the only one: the engine fails.
  self->set_down_handler([self](const caf::down_msg& down) { lose_worker(self, down.source, down.reason); });
}

template <class F>
void for_each_core(self_ptr self, F&& f) {
  for (group& g : self->state.groups) f(*g.core);
}

scheduler_actor::behavior_type scheduler(self_ptr self, scheduler_options opt) {
  make_groups(self, opt);
  self->state.opt = std::move(opt);
  const auto& st = self->state;
  if (st.opt.alive.every.count() > 0 && st.opt.alive.ping) on_alive_tick(self);
  return {
      [=](enqueue_atom, request_id id, request& r, sink_actor& sink, int64_t submitted_ns) {
        auto& s = self->state;
        const clock_type::time_point submitted{clock_type::duration(submitted_ns)};
        const size_t gi = *place(s, id, r);  // a live one: with none left the scheduler has stopped
        s.sinks.emplace(id, std::move(sink));
        s.placed.emplace(id, gi);
        s.groups[gi].core->add(id, std::move(r), std::chrono::duration<double>(submitted - s.epoch).count());
        kick(self);
      },
      [=](cancel_atom, request_id id) {
        const auto it = self->state.placed.find(id);
        if (it == self->state.placed.end()) return;
        scheduler_core& core = *self->state.groups[it->second].core;
        std::vector<request_event> events;
        core.cancel(id, self->state.now(), events);
        dispatch(self, core, events);
      },
      // Kept in opt.config too: a worker joined again starts with what is in force.
      [=](policy_atom, const std::string& name) {
        if (!make_policy(name)) return false;
        for_each_core(self, [&](scheduler_core& c) { c.set_policy(make_policy(name)); });
        self->state.opt.config.policy = name;
        return true;
      },
      [=](tenants_atom, std::vector<tenant_config>& tenants) {
        for_each_core(self, [&](scheduler_core& c) { c.set_tenants(tenants); });
        self->state.opt.config.tenants = std::move(tenants);
        return true;
      },
      [=](gauges_atom) { return gauges_of(self->state); },
      [=](drain_atom) {
        std::vector<request_event> events;
        for_each_core(self, [&](scheduler_core& c) {
          c.drain(reject_reason::shutting_down, "the engine is shutting down", self->state.now(), events);
          dispatch(self, c, events);
        });
        return true;
      },
      [=](fail_atom, const std::string& why) { fail(self, why); },
      [=](alive_atom) { on_alive_tick(self); },
      [=](join_atom, size_t gi, worker_actor& w, const worker_info& info) { rejoined(self, gi, w, info); },
      // Its down message could be lost when its process closes the connection: told here, the
      // server names the stop rather than a lost connection.
      [=](leave_atom) {
        lose_worker(self, caf::actor_cast<caf::actor_addr>(self->current_sender()),
                    caf::make_error(caf::exit_reason::user_shutdown));
        return true;
      },
      [=](overdue_atom, size_t gi, size_t lane_index, uint64_t generation, uint64_t number) {
        const group& g = self->state.groups[gi];
        const std::optional<step>& s = g.loop->in_flight(lane_index);
        if (g.lost || g.generation != generation || !s || s->number != number) return;
        fail(self, "worker: step " + std::to_string(number) + " has not returned in " +
                       std::to_string(self->state.opt.config.step_timeout_ms) + " ms (a hung backend)");
      },
  };
}

}  // namespace

scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_options opt) {
  return sys.spawn(scheduler, std::move(opt));
}

}  // namespace hearth
