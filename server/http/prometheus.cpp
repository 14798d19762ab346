#include "server/http/prometheus.hpp"

#include <cstdio>
#include <span>
#include <string_view>

namespace hearth::http {

namespace {

// A label value as the format escapes it (tenant names are plain, "(unlisted)" included, but
// the writer must not depend on it).
std::string escaped(std::string_view v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string_view("\\n") : std::string_view(&c, 1);
  }
  return out;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

class writer {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  }
  void sample(std::string_view name, std::string_view labels, double v) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(number(v)).append("\n");
  }
  // A histogram's samples: cumulative buckets at `bounds` (each in the summary's unit, written
  // times `scale`: ms to seconds), +Inf, the sum and the count.
  void histogram(std::string_view name, std::string labels, const latency_summary& s,
                 std::span<const double> bounds, double scale) {
    const std::string sep = labels.empty() ? "" : ",";
    const std::string bucket = std::string(name) + "_bucket";
    for (size_t i = 0; i < bounds.size() && i < s.at_most.size(); ++i)
      sample(bucket, labels + sep + "le=\"" + number(bounds[i] * scale) + "\"",
             static_cast<double>(s.at_most[i]));
    sample(bucket, labels + sep + "le=\"+Inf\"", static_cast<double>(s.count));
    sample(std::string(name) + "_sum", labels, s.sum * scale);
    sample(std::string(name) + "_count", labels, static_cast<double>(s.count));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string tenant_label(const tenant_metrics& t) {
  return "tenant=\"" + escaped(t.tenant) + "\"";
}

std::string worker_label(const worker_gauges& w) {
  return "worker=\"" + escaped(w.name) + "\",device=\"" + escaped(w.device) + "\"";
}

void latencies(writer& w, const metrics_snapshot& m) {
  struct family {
    const char* name;
    const char* help;
    latency_summary tenant_metrics::*of;
  };
  const family families[] = {
      {"hearth:time_to_first_token_seconds", "Time from arrival to the first token.", &tenant_metrics::ttft},
      {"hearth:inter_token_latency_seconds", "Time between consecutive tokens of a request.",
       &tenant_metrics::itl},
      {"hearth:e2e_request_latency_seconds", "Time from arrival to the end of a request.",
       &tenant_metrics::e2e},
      {"hearth:request_queue_time_seconds", "Time a request waited before its first step.",
       &tenant_metrics::queue}};
  for (const family& f : families) {
    w.family(f.name, "histogram", f.help);
    for (const tenant_metrics& t : m.tenants)
      w.histogram(f.name, tenant_label(t), t.*f.of, latency_bounds_ms, 1e-3);
  }
}

void counts(writer& w, const metrics_snapshot& m) {
  w.family("hearth:prompt_tokens_total", "counter", "Prompt tokens of requests that ended.");
  for (const auto& t : m.tenants)
    w.sample("hearth:prompt_tokens_total", tenant_label(t), double(t.prompt_tokens));
  w.family("hearth:generation_tokens_total", "counter", "Tokens generated for requests that ended.");
  for (const auto& t : m.tenants)
    w.sample("hearth:generation_tokens_total", tenant_label(t), double(t.completion_tokens));
  w.family("hearth:prefix_cached_tokens_total", "counter", "Prompt tokens found in the prefix cache.");
  for (const auto& t : m.tenants)
    w.sample("hearth:prefix_cached_tokens_total", tenant_label(t), double(t.cached_tokens));
  w.family("hearth:request_success_total", "counter",
           "Requests that ended: stop (end of turn or a stop string), length, or abort (cancelled).");
  for (const auto& t : m.tenants) {
    const std::string l = tenant_label(t) + ",finished_reason=";
    w.sample("hearth:request_success_total", l + "\"stop\"", double(t.done - t.length));
    w.sample("hearth:request_success_total", l + "\"length\"", double(t.length));
    w.sample("hearth:request_success_total", l + "\"abort\"", double(t.cancelled));
  }
  w.family("hearth:request_errors_total", "counter", "Admitted requests that ended with an error.");
  for (const auto& t : m.tenants) w.sample("hearth:request_errors_total", tenant_label(t), double(t.errors));
  w.family("hearth:request_rejected_total", "counter", "Requests refused, by reason.");
  for (const auto& t : m.tenants)
    for (size_t r = 1; r < t.rejected.size(); ++r)  // 0 is reject_reason::none
      w.sample("hearth:request_rejected_total",
               tenant_label(t) + ",reason=\"" + to_string(static_cast<reject_reason>(r)) + "\"",
               double(t.rejected[r]));
}

void engine_figures(writer& w, const metrics_snapshot& m) {
  const scheduler_gauges& g = m.gauges;
  w.family("hearth:num_requests_running", "gauge", "Requests in the running batch.");
  w.sample("hearth:num_requests_running", "", g.running);
  w.family("hearth:num_requests_waiting", "gauge", "Requests admitted and waiting to run.");
  w.sample("hearth:num_requests_waiting", "", g.waiting);
  w.family("hearth:kv_cache_usage_perc", "gauge", "Share of the KV pool's blocks in use (1 = all).");
  w.sample("hearth:kv_cache_usage_perc", "", g.kv.n_blocks ? double(g.kv.used) / g.kv.n_blocks : 0.0);
  w.family("hearth:kv_cache_used_blocks", "gauge", "KV blocks in use (held by a request).");
  w.sample("hearth:kv_cache_used_blocks", "", g.kv.used);
  w.family("hearth:kv_cache_capacity_blocks", "gauge", "KV blocks in the pool.");
  w.sample("hearth:kv_cache_capacity_blocks", "", g.kv.n_blocks);
  w.family("hearth:num_preemptions_total", "counter", "Requests preempted to free KV blocks.");
  w.sample("hearth:num_preemptions_total", "", double(g.preemptions));
  w.family("hearth:prefix_cache_queries_total", "counter", "Full KV blocks looked up in the prefix cache.");
  w.sample("hearth:prefix_cache_queries_total", "", double(g.kv.lookups));
  w.family("hearth:prefix_cache_hits_total", "counter", "Full KV blocks found in the prefix cache.");
  w.sample("hearth:prefix_cache_hits_total", "", double(g.kv.hits));
  w.family("hearth:kv_shipped_bytes_total", "counter",
           "KV block bytes shipped between nodes (disaggregated, a side on another node).");
  w.sample("hearth:kv_shipped_bytes_total", "", double(g.kv_shipped_bytes));
  w.family("hearth:kv_ship_seconds_total", "counter", "Time spent getting shipped KV blocks' bytes.");
  w.sample("hearth:kv_ship_seconds_total", "", 1e-3 * g.kv_ship_ms);
  w.family("hearth:worker_steps_total", "counter", "Steps each worker ran.");
  for (const worker_gauges& k : g.workers)
    w.sample("hearth:worker_steps_total", worker_label(k), double(k.steps));
  w.family("hearth:worker_kv_cache_used_blocks", "gauge", "KV blocks in use in each worker's pool.");
  for (const worker_gauges& k : g.workers)
    w.sample("hearth:worker_kv_cache_used_blocks", worker_label(k), k.kv_blocks_used);
  w.family("hearth:worker_step_seconds_mean", "gauge", "Mean compute time of each worker's steps.");
  for (const worker_gauges& k : g.workers)
    w.sample("hearth:worker_step_seconds_mean", worker_label(k), 1e-3 * k.step_ms);
  w.family("hearth:worker_up", "gauge", "1 while the worker is joined, 0 once it is lost.");
  for (const worker_gauges& k : g.workers) w.sample("hearth:worker_up", worker_label(k), k.lost ? 0.0 : 1.0);
  w.family("hearth:uptime_seconds", "gauge", "Seconds since the engine started.");
  w.sample("hearth:uptime_seconds", "", m.uptime_s);
  w.family("hearth:step_duration_seconds", "histogram", "Time of one engine step, to its result back.");
  w.histogram("hearth:step_duration_seconds", "", m.steps.step_ms, latency_bounds_ms, 1e-3);
  w.family("hearth:step_prefill_tokens", "histogram", "Prompt tokens computed in one step.");
  w.histogram("hearth:step_prefill_tokens", "", m.steps.prefill_tokens, size_bounds, 1);
  w.family("hearth:step_decode_tokens", "histogram", "Decode tokens computed in one step.");
  w.histogram("hearth:step_decode_tokens", "", m.steps.decode_tokens, size_bounds, 1);
  w.family("hearth:step_sequences", "histogram", "Sequences in one step.");
  w.histogram("hearth:step_sequences", "", m.steps.seqs, size_bounds, 1);
}

}  // namespace

std::string prometheus_text(const metrics_snapshot& m) {
  writer w;
  latencies(w, m);
  counts(w, m);
  engine_figures(w, m);
  return w.take();
}

}  // namespace hearth::http
