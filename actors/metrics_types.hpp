#pragma once
// What the metrics actor keeps and reports: log-bucketed latency histograms (1 % resolution,
// fixed memory however many requests pass) per tenant, counts by outcome and rejection reason,
// what each iteration ran (the same histograms, over counts as well as times), and the
// engine's latest gauges.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/request.hpp"
#include "core/scheduler_core.hpp"

namespace hearth {

class latency_histogram {
 public:
  void add(double ms);
  uint64_t count() const { return count_; }
  //! The q-quantile (0..1), within 1 %; 0 when empty.
  double quantile(double q) const;
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0; }
  double max() const { return max_; }
  double sum() const { return sum_; }
  //! How many values were at most `ms`; values up to 1 % above it may count too (its bucket's).
  uint64_t count_at_most(double ms) const;

 private:
  // 1 us * 1.01^2400 ~ 6.4 h: a request's whole life, and a stuck step's. (1200 buckets ended at
  // 1.01^1200 us = 152 ms: every slower step read as 151.8 ms at every quantile.) The last bucket
  // holds everything beyond, and its quantile is the largest value seen.
  static constexpr size_t n_buckets = 2400;
  std::array<uint32_t, n_buckets> buckets_{};
  uint64_t count_ = 0;
  double sum_ = 0, max_ = 0;
};

//! The upper bounds of the cumulative buckets a summary counts (Prometheus' `le`): latencies in
//! ms, dense below 100 ms where voice targets are; step sizes in tokens or sequences.
inline constexpr std::array<double, 19> latency_bounds_ms = {
    1, 5, 10, 20, 30, 40, 50, 60, 80, 100, 150, 200, 300, 500, 1000, 2500, 5000, 10000, 60000};
inline constexpr std::array<double, 14> size_bounds = {1,   2,   4,   8,    16,   32,   64,
                                                       128, 256, 512, 1024, 2048, 4096, 8192};

struct latency_summary {
  uint64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
  double sum = 0;
  std::vector<uint64_t> at_most = {};  //!< per bound summarize() was given: count_at_most
};

//! The name under which tenant names beyond the metrics actor's bound are counted together (not
//! a valid tenant name, so it never stands for one).
inline constexpr std::string_view unlisted_tenants = "(unlisted)";

struct tenant_metrics {
  std::string tenant;
  uint64_t done = 0, cancelled = 0, errors = 0;
  uint64_t length = 0;                 //!< of `done`: ended by max_tokens or the context
  std::array<uint64_t, 7> rejected{};  //!< by reject_reason
  uint64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  latency_summary ttft, itl, e2e, queue;  //!< itl: every gap between consecutive tokens
};

//! One finished iteration, as the scheduler actor reports it to metrics.
struct step_sample {
  uint32_t seqs = 0;
  uint32_t prefill_tokens = 0;  //!< prompt chunks (and recompute)
  uint32_t decode_tokens = 0;
  double step_ms = 0;  //!< sent to the worker to its result back
};

//! Distributions over every iteration so far (both workers' steps when disaggregated).
struct step_metrics {
  latency_summary seqs, prefill_tokens, decode_tokens, step_ms;
};

struct metrics_snapshot {
  double uptime_s = 0;
  std::vector<tenant_metrics> tenants;
  scheduler_gauges gauges;
  step_metrics steps;
};

latency_summary summarize(const latency_histogram& h, std::span<const double> bounds);

}  // namespace hearth
