#include "actors/metrics.hpp"

#include <chrono>
#include <cmath>
#include <map>

#include "actors/messages.hpp"

namespace hearth {

namespace {

struct tenant_state {
  tenant_metrics counts;
  latency_histogram ttft, itl, e2e, queue;
};

struct step_state {
  latency_histogram seqs, prefill_tokens, decode_tokens, step_ms;
};

struct metrics_state {
  std::map<std::string, tenant_state> tenants;
  step_state steps;
  scheduler_gauges gauges;
  std::chrono::steady_clock::time_point started;
  static inline const char* name = "metrics";
};

void add(tenant_state& t, const request_record& r) {
  auto& c = t.counts;
  switch (r.kind) {
    case event_kind::done: ++c.done; break;
    case event_kind::cancelled: ++c.cancelled; break;
    default: ++c.errors; break;
  }
  c.prompt_tokens += r.use.prompt_tokens;
  c.completion_tokens += r.use.completion_tokens;
  c.cached_tokens += r.use.cached_tokens;
  t.queue.add(r.time.queue_ms);
  t.e2e.add(r.time.e2e_ms);
  if (r.token_ms.empty()) return;
  t.ttft.add(r.token_ms.front());
  for (size_t i = 1; i < r.token_ms.size(); ++i) t.itl.add(r.token_ms[i] - r.token_ms[i - 1]);
}

// Counts in the log histogram: a bucket's upper bound lies within 1 % above its values, so the
// floor gives integers back exactly below 100, and within 1 % above.
latency_summary summarize_count(const latency_histogram& h) {
  latency_summary s = summarize(h);
  for (double* q : {&s.p50, &s.p90, &s.p99}) *q = std::floor(*q + 1e-6);
  return s;
}

metrics_snapshot snapshot(const metrics_state& st) {
  metrics_snapshot s;
  s.uptime_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - st.started).count();
  s.gauges = st.gauges;
  const step_state& p = st.steps;
  s.steps = {summarize_count(p.seqs), summarize_count(p.prefill_tokens), summarize_count(p.decode_tokens),
             summarize(p.step_ms)};
  for (const auto& [name, t] : st.tenants) {
    tenant_metrics m = t.counts;
    m.tenant = name;
    m.ttft = summarize(t.ttft);
    m.itl = summarize(t.itl);
    m.e2e = summarize(t.e2e);
    m.queue = summarize(t.queue);
    s.tenants.push_back(std::move(m));
  }
  return s;
}

caf::behavior metrics(caf::stateful_actor<metrics_state>* self, std::chrono::steady_clock::time_point started) {
  self->state.started = started;
  return {
      [=](records_atom, const std::vector<request_record>& records) {
        for (const auto& r : records) add(self->state.tenants[r.tenant], r);
      },
      [=](rejected_atom, const std::string& tenant, reject_reason why) {
        ++self->state.tenants[tenant].counts.rejected[static_cast<size_t>(why)];
      },
      [=](gauges_atom, const scheduler_gauges& g) { self->state.gauges = g; },
      [=](stepped_atom, const step_sample& x) {
        step_state& p = self->state.steps;
        p.seqs.add(x.seqs);
        p.prefill_tokens.add(x.prefill_tokens);
        p.decode_tokens.add(x.decode_tokens);
        p.step_ms.add(x.step_ms);
      },
      [=](stats_atom) { return snapshot(self->state); },
  };
}

}  // namespace

// The start time is an argument, not taken inside: CAF 0.17 binds a reference through a null
// pointer for actors spawned without arguments, which UBSan reports.
caf::actor spawn_metrics(caf::actor_system& sys) { return sys.spawn(metrics, std::chrono::steady_clock::now()); }

}  // namespace hearth
