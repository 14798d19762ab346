#pragma once
// The report of one run: per class and overall, every figure of stats.hpp; the server's
// iterations beside its configured limits; queue depth and KV usage over time. Rendered as a
// human table and as JSON (every figure, the time series, each request, and the configuration
// the caller passes in).

#include <cstdio>

#include <nlohmann/json.hpp>

#include "bench/household/runner.hpp"
#include "bench/household/schedule.hpp"
#include "core/config.hpp"

namespace hearth::household {

struct bench_report {
  group_report overall;               //!< every request, each judged by its own class's SLO
  std::vector<group_report> classes;  //!< in workload order
  server_figures server;
  dist_summary waiting, running, kv_used_pct;  //!< over the gauge samples
  double duration_s = 0, max_send_lag_ms = 0;
  uint32_t clamped = 0;
};

bench_report make_report(const workload& w, const schedule& s, const run_result& r);
void print_report(const bench_report& r, std::FILE* out);

//! Every figure; `run` adds the time series and one row per request.
nlohmann::json to_json(const bench_report& r, const workload& w, const run_result& run);
nlohmann::json to_json(const workload& w);
nlohmann::json to_json(const engine_config& c);
//! One line: "seqs 64, tokens 256, chunk 128, fcfs, colocated".
std::string describe(const engine_config& c);
nlohmann::json to_json(const dist_summary& d);

}  // namespace hearth::household
