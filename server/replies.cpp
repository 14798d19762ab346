#include "server/replies.hpp"

#include <algorithm>

#include "server/protocol.hpp"

namespace hearth::server {

namespace {

using json = nlohmann::json;

json latency(const latency_summary& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50},
          {"p90", s.p90},     {"p99", s.p99},   {"max", s.max}};
}

// `name`'s counters; a name counted among the unlisted ones (actors/metrics.hpp) gets theirs,
// marked as such.
json tenant_counters(const std::string& name, const std::vector<tenant_metrics>& all) {
  auto named = [&](std::string_view n) {
    return std::find_if(all.begin(), all.end(), [&](const tenant_metrics& t) { return t.tenant == n; });
  };
  auto it = named(name);
  const bool shared = it == all.end() && named(unlisted_tenants) != all.end();
  if (shared) it = named(unlisted_tenants);
  tenant_metrics t = it != all.end() ? *it : tenant_metrics{};
  json rejected = json::object();
  for (size_t r = 0; r < t.rejected.size(); ++r)
    if (t.rejected[r] > 0) rejected[to_string(static_cast<reject_reason>(r))] = t.rejected[r];
  json counters = {{"name", name},
                   {"done", t.done},
                   {"cancelled", t.cancelled},
                   {"errors", t.errors},
                   {"rejected", rejected},
                   {"prompt_tokens", t.prompt_tokens},
                   {"completion_tokens", t.completion_tokens},
                   {"cached_tokens", t.cached_tokens},
                   {"ttft_ms", latency(t.ttft)},
                   {"itl_ms", latency(t.itl)},
                   {"e2e_ms", latency(t.e2e)},
                   {"queue_ms", latency(t.queue)}};
  if (shared) counters["counted_as"] = unlisted_tenants;
  return counters;
}

// Every tenant with counters or requests in flight, by name: an admin's `stats` with `all`.
json every_tenant(const metrics_snapshot& m) {
  std::vector<std::string> names;
  for (const tenant_metrics& t : m.tenants) names.push_back(t.tenant);
  for (const tenant_load& l : m.gauges.tenants)
    if (std::find(names.begin(), names.end(), l.tenant) == names.end()) names.push_back(l.tenant);
  std::sort(names.begin(), names.end());
  json out = json::array();
  for (const std::string& name : names) {
    json t = tenant_counters(name, m.tenants);
    const auto l = std::find_if(m.gauges.tenants.begin(), m.gauges.tenants.end(),
                                [&](const tenant_load& x) { return x.tenant == name; });
    t["waiting"] = l != m.gauges.tenants.end() ? l->waiting : 0;
    t["running"] = l != m.gauges.tenants.end() ? l->running : 0;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

json pong_reply(const std::string& id, const std::optional<std::string>& tenant) {
  return {{"type", "pong"},
          {"id", id},
          {"protocol", wire::protocol_version},
          {"revision", wire::protocol_revision},
          {"server", "hearth " HEARTH_VERSION},
          {"tenant", tenant ? json(*tenant) : json(nullptr)}};
}

json stats_reply(const std::string& id, const metrics_snapshot& m, const std::string& tenant,
                 const engine_config& cfg, const std::string& policy, bool all) {
  const scheduler_gauges& g = m.gauges;
  const step_metrics& st = m.steps;
  json engine = {{"waiting", g.waiting},
                 {"running", g.running},
                 {"preemptions", g.preemptions},
                 {"steps", g.steps},
                 {"prefill_tokens", g.prefill_tokens},
                 {"decode_tokens", g.decode_tokens},
                 {"kv_blocks_used", g.kv.used},
                 {"kv_blocks_total", g.kv.n_blocks},
                 {"prefix_hits", g.kv.hits},
                 {"prefix_lookups", g.kv.lookups},
                 {"kv_shipped_bytes", g.kv_shipped_bytes},
                 {"kv_ship_ms", g.kv_ship_ms},
                 {"policy", policy},
                 {"per_step",
                  {{"seqs", latency(st.seqs)},
                   {"prefill_tokens", latency(st.prefill_tokens)},
                   {"decode_tokens", latency(st.decode_tokens)},
                   {"step_ms", latency(st.step_ms)}}},
                 {"limits",
                  {{"max_seqs", cfg.max_seqs},
                   {"max_batched_tokens", cfg.max_batched_tokens},
                   {"long_prefill_threshold", cfg.long_prefill_threshold},
                   {"max_partial_prefills", cfg.max_partial_prefills},
                   {"max_waiting", cfg.max_waiting},
                   {"mode", to_string(cfg.mode)}}}};
  json workers = json::array();
  for (const worker_gauges& w : g.workers)
    workers.push_back({{"name", w.name},
                       {"device", w.device},
                       {"lost", w.lost},
                       {"waiting", w.waiting},
                       {"running", w.running},
                       {"steps", w.steps},
                       {"kv_blocks_used", w.kv_blocks_used},
                       {"kv_blocks_total", w.kv_blocks_total},
                       {"step_ms", w.step_ms}});
  engine["workers"] = std::move(workers);
  json reply = {{"type", "stats"},
                {"id", id},
                {"uptime_s", m.uptime_s},
                {"engine", engine},
                {"tenant", tenant_counters(tenant, m.tenants)}};
  if (all) reply["tenants"] = every_tenant(m);
  return reply;
}

json models_reply(const std::string& id, const model_card& card) {
  json model = {{"name", card.name},
                {"architecture", card.architecture},
                {"n_ctx", card.n_ctx},
                {"n_vocab", card.n_vocab},
                {"chat_format", card.chat_format}};
  if (card.generated) model["generated"] = true;
  return {{"type", "models"}, {"id", id}, {"models", json::array({std::move(model)})}};
}

}  // namespace hearth::server
