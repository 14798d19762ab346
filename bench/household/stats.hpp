#pragma once
// The figures of a run, from what the client saw. Definitions (bench/README.md repeats them):
// - percentile: linear interpolation between closest ranks of the sorted samples (numpy's
//   default, which vLLM's serving benchmark uses): h = (n - 1) p, x[floor h] + frac(h) (x[floor h + 1] -
//   x[floor h]).
// - TTFT: arrival (the scheduled time, so a late sender cannot hide queueing) to the first token.
// - ITL: every gap between two consecutive tokens of a stream, pooled over requests.
// - TPOT: per request, (last token - first token) / (tokens - 1); requests of one token have none.
// - E2E: arrival to the terminal message.
// - A request meets its SLO when it ends `done` with at least one token, its TTFT <= the TTFT
//   target, and the `itl_quantile` percentile of its own gaps <= the ITL target (a target of 0
//   is no target; a request with no gap meets any ITL target).
// - attainment: requests meeting their SLO / requests issued (rejected, failed, cancelled and
//   unfinished ones count as missing). goodput: requests meeting their SLO / the run's duration.
// - throughput: done requests, their prompt tokens and their completion tokens / duration.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/request.hpp"

namespace hearth::household {

//! The p-quantile (p in [0, 1]) of ascending samples; 0 when there are none.
double percentile(std::span<const double> sorted, double p);

struct dist_summary {
  uint64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

//! Sorts its argument.
dist_summary summarize(std::vector<double>& samples);

//! One request as the client saw it; times in seconds from the start of the run.
struct bench_record {
  size_t index = 0;
  uint32_t cls = 0;             //!< index of its workload class
  double arrival_s = 0;         //!< when the schedule said to send it
  double sent_s = -1;           //!< when it was sent (-1: not yet)
  std::vector<double> token_s;  //!< each streamed token's arrival at the client
  double end_s = -1;            //!< its terminal message (-1: it never ended)
  event_kind kind = event_kind::error;
  reject_reason reason = reject_reason::none;
  uint32_t prompt_tokens = 0, max_tokens = 0;
  usage use;
  timings server;  //!< the server's own split of its TTFT
  uint32_t preemptions = 0;

  bool ended() const { return end_s >= 0; }
  double ttft_ms() const { return 1e3 * (token_s.front() - arrival_s); }
  std::vector<double> gaps_ms() const;
};

struct slo_target {
  double ttft_ms = 0, itl_ms = 0;  //!< 0 = none
  double itl_quantile = 0.9;
};

bool meets_slo(const bench_record& r, const slo_target& slo);

//! The figures of one group of requests (a class, or all of them).
struct group_report {
  std::string name;
  slo_target slo;  //!< the class's (for "all": each request is judged by its own class)
  uint64_t issued = 0, done = 0, errors = 0, cancelled = 0, unfinished = 0, met_slo = 0;
  std::array<uint64_t, 7> rejected{};  //!< by reject_reason
  uint64_t prompt_tokens = 0, output_tokens = 0, preemptions = 0;
  dist_summary ttft_ms, itl_ms, tpot_ms, e2e_ms;
  dist_summary queue_ms, prefill_ms, first_step_ms;  //!< the server's split of TTFT
  double request_throughput = 0, prompt_throughput = 0, output_throughput = 0;  //!< per second
  double goodput = 0, attainment = 0;
};

//! records and, for each, its SLO (parallel spans); duration_s > 0.
group_report summarize_group(std::string name, std::span<const bench_record* const> records,
                             std::span<const slo_target* const> slos, double duration_s);

}  // namespace hearth::household
