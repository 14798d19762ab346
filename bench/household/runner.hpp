#pragma once
// The open loop: one thread sends each request at its arrival time, never waiting for earlier
// ones to progress; another samples the server's gauges (queue depth, KV usage) and draws the
// progress bar. Tokens and ends are stamped as the target reports them. After the last arrival,
// requests get `drain_s` to end; those still running then are left unfinished (they count as
// missing their SLO) and the run is over.

#include <cstdio>
#include <vector>

#include "bench/household/target.hpp"

namespace hearth::household {

struct gauge_sample {
  double t_s = 0;
  target_gauges g;
};

struct run_options {
  double drain_s = 60;
  double gauge_period_s = 0.25;
  std::FILE* progress = nullptr;  //!< a progress bar with ETA here (a terminal), or none
};

struct run_result {
  std::vector<bench_record> records;  //!< one per scheduled request, in schedule order
  std::vector<gauge_sample> gauges;
  server_figures server;
  double duration_s = 0;       //!< start to the last end (or the drain deadline)
  double max_send_lag_ms = 0;  //!< the sender's worst delay behind the schedule
};

//! Runs `requests` (by arrival time; index == position) against the target. `cls`: each one's class.
run_result run_open_loop(bench_target& target, const std::vector<bench_request>& requests,
                         const std::vector<uint32_t>& cls, const run_options& opt);

}  // namespace hearth::household
