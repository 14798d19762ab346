#include "actors/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_map>

#include "core/step_lanes.hpp"

namespace hearth {

namespace {

using clock_type = std::chrono::steady_clock;

// A lane's worker, and when its step in flight left.
struct lane {
  worker_actor worker;
  clock_type::time_point sent_at;
};

struct scheduler_state {
  scheduler_options opt;
  std::unique_ptr<scheduler_core> core;
  std::unordered_map<request_id, sink_actor> sinks;
  std::optional<step_lanes> loop;  // the decisions; lanes[i] is its lane i's worker
  std::vector<lane> lanes;
  clock_type::time_point epoch = clock_type::now();
  double compute_ms = 0, overhead_ms = 0;
  static inline const char* name = "scheduler";

  double now() const { return std::chrono::duration<double>(clock_type::now() - epoch).count(); }
};

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

// The bookkeeping the other actors need, then each event to its request's sink (after a terminal
// one the sink is forgotten). Metrics first: a request's record is in by the time its client
// hears of its end, so the client's next stats counts it.
void dispatch(self_ptr self, std::vector<request_event>& events) {
  auto& st = self->state;
  if (auto dq = st.core->take_dequeued(); !dq.empty())
    self->send(st.opt.admission, dequeued_atom::value, std::move(dq));
  if (auto records = st.core->take_records(); !records.empty()) {
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
    if (last) st.sinks.erase(it);
  }
  events.clear();
}

scheduler_gauges gauges_of(const scheduler_state& st) {
  scheduler_gauges g = st.core->gauges();
  g.compute_ms = st.compute_ms;
  g.overhead_ms = st.overhead_ms;
  return g;
}

void on_result(self_ptr self, size_t lane_index, step_result& r);

// The engine has failed (actors/engine.hpp): every request ends with `internal`, and the
// scheduler stops, so the supervisor reports the failure if it did not find it itself.
void fail(self_ptr self, const std::string& why) {
  std::vector<request_event> events;
  self->state.core->drain(reject_reason::internal, why, self->state.now(), events);
  dispatch(self, events);
  self->quit(caf::make_error(caf::sec::runtime_error, why));
}

// Starts a step on every idle worker for which something can run.
void kick(self_ptr self) {
  auto& st = self->state;
  for (size_t i : st.loop->start(*st.core, st.now())) {
    const step& s = *st.loop->in_flight(i);
    st.lanes[i].sent_at = clock_type::now();
    self->delayed_send(self, std::chrono::milliseconds(st.opt.config.step_timeout_ms), overdue_atom::value, i,
                       s.number);
    self->request(st.lanes[i].worker, caf::infinite, s)
        .then([=](step_result& r) { on_result(self, i, r); },
              [=](caf::error& err) {
                step_result r{.number = self->state.loop->in_flight(i)->number,
                              .error = "worker: " + self->system().render(err)};
                on_result(self, i, r);
              });
  }
}

void on_result(self_ptr self, size_t lane_index, step_result& r) {
  auto& st = self->state;
  const auto received = clock_type::now();
  const double round_trip =
      std::chrono::duration<double, std::milli>(received - st.lanes[lane_index].sent_at).count();
  if (r.error.empty()) {
    const step& s = *st.loop->in_flight(lane_index);
    const uint32_t decode = s.n_tokens_decode();
    self->send(st.opt.metrics, stepped_atom::value,
               step_sample{static_cast<uint32_t>(s.seqs.size()), s.n_tokens() - decode, decode, round_trip});
    if (st.opt.step_end) st.opt.step_end(s, round_trip);
  }
  std::vector<request_event> events;
  st.loop->finish(lane_index, r, *st.core, st.now(), events);
  dispatch(self, events);
  self->send(st.opt.metrics, gauges_atom::value, gauges_of(st));
  kick(self);
  // Overhead: the step's round trip beyond the worker's compute, plus the time from its result
  // to this worker's next step leaving.
  const double turn = std::chrono::duration<double, std::milli>(clock_type::now() - received).count();
  st.compute_ms += r.compute_ms;
  st.overhead_ms += std::max(0.0, round_trip - r.compute_ms) + (st.loop->in_flight(lane_index) ? turn : 0.0);
}

// The engine is alive when this loop runs and every step in flight is younger than the step
// timeout: past it the step is hung (and the overdue check fails the engine).
void on_alive_tick(self_ptr self) {
  auto& st = self->state;
  const auto limit = std::chrono::milliseconds(st.opt.config.step_timeout_ms);
  const auto now = clock_type::now();
  bool stuck = false;
  for (size_t i = 0; i < st.lanes.size(); ++i)
    stuck = stuck || (st.loop->in_flight(i) && now - st.lanes[i].sent_at > limit);
  if (!stuck) st.opt.alive.ping();
  self->delayed_send(self, st.opt.alive.every, alive_atom::value);
}

scheduler_actor::behavior_type scheduler(self_ptr self, scheduler_options opt) {
  auto& st = self->state;
  st.core = std::make_unique<scheduler_core>(opt.config, *opt.tok, opt.n_ctx, opt.n_blocks, opt.block_size,
                                             make_policy(opt.config.policy));
  st.loop.emplace(opt.decode_worker ? placement_mode::disaggregated : placement_mode::colocated);
  st.lanes = {{opt.worker, {}}};
  if (opt.decode_worker) st.lanes.push_back({opt.decode_worker, {}});
  st.opt = std::move(opt);
  if (st.opt.alive.every.count() > 0 && st.opt.alive.ping) on_alive_tick(self);
  return {
      [=](enqueue_atom, request_id id, request& r, sink_actor& sink, int64_t submitted_ns) {
        auto& s = self->state;
        const clock_type::time_point submitted{clock_type::duration(submitted_ns)};
        s.sinks.emplace(id, std::move(sink));
        s.core->add(id, std::move(r), std::chrono::duration<double>(submitted - s.epoch).count());
        kick(self);
      },
      [=](cancel_atom, request_id id) {
        std::vector<request_event> events;
        self->state.core->cancel(id, self->state.now(), events);
        dispatch(self, events);
      },
      [=](policy_atom, const std::string& name) {
        auto p = make_policy(name);
        if (!p) return false;
        self->state.core->set_policy(std::move(p));
        return true;
      },
      [=](tenants_atom, std::vector<tenant_config>& tenants) {
        self->state.core->set_tenants(std::move(tenants));
        return true;
      },
      [=](gauges_atom) { return gauges_of(self->state); },
      [=](drain_atom) {
        std::vector<request_event> events;
        self->state.core->drain(reject_reason::shutting_down, "the engine is shutting down",
                                self->state.now(), events);
        dispatch(self, events);
        return true;
      },
      [=](fail_atom, const std::string& why) { fail(self, why); },
      [=](alive_atom) { on_alive_tick(self); },
      [=](overdue_atom, size_t lane_index, uint64_t number) {
        const std::optional<step>& s = self->state.loop->in_flight(lane_index);
        if (!s || s->number != number) return;
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
