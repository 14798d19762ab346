#include "actors/admission.hpp"

#include <string>

#include "actors/messages.hpp"

namespace hearth {

namespace {

struct admission_state {
  admission_limits limits;
  caf::actor scheduler, metrics;
  uint32_t waiting = 0;          // accepted, not yet started by the scheduler
  uint64_t waiting_tokens = 0;   // their prompt tokens
  bool draining = false;
  static inline const char* name = "admission";
};

struct refusal {
  reject_reason reason;
  std::string message;
};

std::optional<refusal> check(const admission_state& st, const request& r) {
  const auto& l = st.limits;
  if (st.draining) return refusal{reject_reason::shutting_down, "the engine is shutting down"};
  if (r.prompt.empty()) return refusal{reject_reason::bad_request, "prompt: empty"};
  for (token_id t : r.prompt) {
    if (t < 0 || static_cast<uint32_t>(t) >= l.n_vocab) {
      return refusal{reject_reason::bad_request, "prompt: token " + std::to_string(t) + " is not in the vocabulary"};
    }
  }
  if (r.max_tokens == 0) return refusal{reject_reason::bad_request, "max_tokens: must be >= 1"};
  if (auto s = sampler::create(r.sampling); !s) return refusal{reject_reason::bad_request, s.error().message};
  const uint64_t need = uint64_t{r.prompt.size()} + r.max_tokens;
  if (need > l.n_ctx || need > l.pool_tokens) {
    return refusal{reject_reason::too_long,
                   "prompt (" + std::to_string(r.prompt.size()) + " tokens) + max_tokens (" +
                       std::to_string(r.max_tokens) + ") exceeds " +
                       (need > l.n_ctx ? "the context of " + std::to_string(l.n_ctx)
                                       : "the KV pool of " + std::to_string(l.pool_tokens)) +
                       " tokens"};
  }
  if (st.waiting >= l.max_waiting || st.waiting_tokens + r.prompt.size() > l.max_waiting_tokens) {
    return refusal{reject_reason::queue_full, "the queue is full; retry later"};
  }
  return std::nullopt;
}

caf::behavior admission(caf::stateful_actor<admission_state>* self, admission_limits limits, caf::actor metrics) {
  self->state.limits = limits;
  self->state.metrics = std::move(metrics);
  return {
      [=](ready_atom, caf::actor& scheduler) { self->state.scheduler = std::move(scheduler); },
      [=](submit_atom, request_id id, request& r, caf::actor& sink, int64_t submitted_ns) {
        auto& st = self->state;
        if (auto no = check(st, r)) {
          request_event ev;
          ev.id = id;
          ev.kind = event_kind::rejected;
          ev.reason = no->reason;
          ev.message = std::move(no->message);
          self->send(sink, std::move(ev));
          self->send(st.metrics, rejected_atom::value, r.tenant, no->reason);
          return;
        }
        ++st.waiting;
        st.waiting_tokens += r.prompt.size();
        request_event ev;
        ev.id = id;
        ev.kind = event_kind::accepted;
        self->send(sink, std::move(ev));
        self->send(st.scheduler, enqueue_atom::value, id, std::move(r), std::move(sink), submitted_ns);
      },
      [=](cancel_atom a, request_id id) { self->send(self->state.scheduler, a, id); },
      [=](dequeued_atom, const std::vector<request_id>& ids, const std::vector<uint32_t>& tokens) {
        auto& st = self->state;
        st.waiting -= static_cast<uint32_t>(ids.size());
        for (uint32_t n : tokens) st.waiting_tokens -= n;
      },
      [=](drain_atom a) {
        // Delegated after every request forwarded so far: the scheduler ends them all.
        self->state.draining = true;
        return self->delegate(self->state.scheduler, a);
      },
  };
}

}  // namespace

caf::actor spawn_admission(caf::actor_system& sys, admission_limits limits, caf::actor metrics) {
  return sys.spawn(admission, limits, std::move(metrics));
}

}  // namespace hearth
