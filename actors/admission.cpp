#include "actors/admission.hpp"

#include <chrono>
#include <memory>

namespace hearth {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct admission_state {
  std::unique_ptr<admission_core> core;
  scheduler_actor scheduler;
  metrics_actor metrics;
  static inline const char* name = "admission";
};

admission_actor::behavior_type admission(admission_actor::stateful_pointer<admission_state> self,
                                         admission_limits limits, std::vector<tenant_config> tenants,
                                         metrics_actor metrics) {
  self->state.core = std::make_unique<admission_core>(limits, std::move(tenants), now_s());
  self->state.metrics = std::move(metrics);
  return {
      [=](ready_atom, scheduler_actor& scheduler) { self->state.scheduler = std::move(scheduler); },
      [=](submit_atom, request_id id, request& r, sink_actor& sink, int64_t submitted_ns) {
        auto& st = self->state;
        request_event ev;
        ev.id = id;
        if (auto no = st.core->admit(id, r, now_s())) {
          ev.kind = event_kind::rejected;
          ev.reason = no->reason;
          ev.message = std::move(no->message);
          ev.retry_after_ms = no->retry_after_ms;
          // Counted before the client hears of it, so its next stats already show it.
          self->send(st.metrics, rejected_atom::value, r.tenant, no->reason);
          self->send(sink, std::move(ev));
          return;
        }
        ev.kind = event_kind::accepted;
        self->send(sink, std::move(ev));
        self->send(st.scheduler, enqueue_atom::value, id, std::move(r), std::move(sink), submitted_ns);
      },
      [=](cancel_atom a, request_id id) { self->send(self->state.scheduler, a, id); },
      [=](dequeued_atom, const std::vector<request_id>& ids) {
        for (request_id id : ids) self->state.core->dequeued(id);
      },
      [=](finished_atom, const std::vector<request_id>& ids, const std::vector<uint32_t>& completion_tokens) {
        const double now = now_s();
        for (size_t i = 0; i < ids.size(); ++i) self->state.core->finished(ids[i], completion_tokens[i], now);
      },
      [=](tenants_atom, std::vector<tenant_config>& table) {
        self->state.core->set_tenants(std::move(table), now_s());
        return true;
      },
      [=](drain_atom a) -> caf::delegated<bool> {
        // Delegated after every request forwarded so far: the scheduler ends them all.
        self->state.core->drain();
        return self->delegate(self->state.scheduler, a);
      },
  };
}

}  // namespace

admission_actor spawn_admission(caf::actor_system& sys, admission_limits limits,
                                std::vector<tenant_config> tenants, metrics_actor metrics) {
  return sys.spawn(admission, limits, std::move(tenants), std::move(metrics));
}

}  // namespace hearth
