#include "actors/metrics.hpp"

#include <chrono>
#include <cmath>
#include <map>
#include <set>

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

// Names outside the tenant table (development mode lets a client name any) get state of their
// own up to this many; all further ones share one (about 20 KB each: 100,000 names sent by one
// client grew the server by 2 GB before).
constexpr size_t max_unlisted_names = 64;

struct metrics_state {
  std::map<std::string, tenant_state> tenants;
  std::set<std::string> listed;  // the tenant table's names
  size_t n_unlisted = 0;         // names of `tenants` not in `listed` when first counted
  step_state steps;
  scheduler_gauges gauges;
  std::chrono::steady_clock::time_point started;
  static inline const char* name = "metrics";
};

// The state `name` is counted in.
tenant_state& state_of(metrics_state& st, const std::string& name) {
  if (const auto it = st.tenants.find(name); it != st.tenants.end()) return it->second;
  if (!st.listed.contains(name)) {
    if (st.n_unlisted == max_unlisted_names) return st.tenants[std::string(unlisted_tenants)];
    ++st.n_unlisted;
  }
  return st.tenants[name];
}

void add(tenant_state& t, const request_record& r) {
  auto& c = t.counts;
  switch (r.kind) {
    case event_kind::done:
      ++c.done;
      c.length += r.finish == finish_reason::length;
      break;
    case event_kind::cancelled:
      ++c.cancelled;
      break;
    default:
      ++c.errors;
      break;
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
  latency_summary s = summarize(h, size_bounds);
  for (double* q : {&s.p50, &s.p90, &s.p99}) *q = std::floor(*q + 1e-6);
  return s;
}

tenant_metrics summary(const std::string& name, const tenant_state& t) {
  tenant_metrics m = t.counts;
  m.tenant = name;
  m.ttft = summarize(t.ttft, latency_bounds_ms);
  m.itl = summarize(t.itl, latency_bounds_ms);
  m.e2e = summarize(t.e2e, latency_bounds_ms);
  m.queue = summarize(t.queue, latency_bounds_ms);
  return m;
}

// Everything but the tenants.
metrics_snapshot engine_snapshot(const metrics_state& st) {
  metrics_snapshot s;
  s.uptime_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - st.started).count();
  s.gauges = st.gauges;
  const step_state& p = st.steps;
  s.steps = {summarize_count(p.seqs), summarize_count(p.prefill_tokens), summarize_count(p.decode_tokens),
             summarize(p.step_ms, latency_bounds_ms)};
  return s;
}

metrics_snapshot snapshot(const metrics_state& st) {
  metrics_snapshot s = engine_snapshot(st);
  for (const auto& [name, t] : st.tenants) s.tenants.push_back(summary(name, t));
  return s;
}

// The engine's figures and the one tenant's, under the name it is counted as.
metrics_snapshot snapshot(const metrics_state& st, const std::string& name) {
  metrics_snapshot s = engine_snapshot(st);
  auto it = st.tenants.find(name);
  if (it == st.tenants.end() && !st.listed.contains(name) && st.n_unlisted == max_unlisted_names)
    it = st.tenants.find(std::string(unlisted_tenants));
  if (it != st.tenants.end()) s.tenants.push_back(summary(it->first, it->second));
  return s;
}

std::set<std::string> names_of(const std::vector<tenant_config>& tenants) {
  std::set<std::string> names;
  for (const auto& t : tenants) names.insert(t.name);
  return names;
}

metrics_actor::behavior_type metrics(metrics_actor::stateful_pointer<metrics_state> self,
                                     std::chrono::steady_clock::time_point started,
                                     std::vector<tenant_config> tenants,
                                     std::function<void(const request_record&)> request_end) {
  self->state.started = started;
  self->state.listed = names_of(tenants);
  return {
      [=](records_atom, const std::vector<request_record>& records) {
        for (const auto& r : records) {
          add(state_of(self->state, r.tenant), r);
          if (request_end) request_end(r);
        }
      },
      [=](rejected_atom, const std::string& tenant, reject_reason why) {
        ++state_of(self->state, tenant).counts.rejected[static_cast<size_t>(why)];
        if (!request_end) return;
        request_record refused;
        refused.tenant = tenant;
        refused.kind = event_kind::rejected;
        refused.reason = why;
        request_end(refused);
      },
      [=](tenants_atom, const std::vector<tenant_config>& table) {
        self->state.listed = names_of(table);
        return true;
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
      [=](stats_atom, const std::string& tenant) { return snapshot(self->state, tenant); },
  };
}

}  // namespace

// The start time is an argument, not taken inside: CAF 0.17 binds a reference through a null
// pointer for actors spawned without arguments, which UBSan reports.
metrics_actor spawn_metrics(caf::actor_system& sys, const std::vector<tenant_config>& tenants,
                            std::function<void(const request_record&)> request_end) {
  return sys.spawn(metrics, std::chrono::steady_clock::now(), tenants, std::move(request_end));
}

}  // namespace hearth
