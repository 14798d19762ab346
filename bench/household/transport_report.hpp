#pragma once
// What each gateway costs, from runs whose requests alternated between them (split_target.hpp).
// `hearth bench serve --via both` runs the schedule twice, on fresh servers, the second time with
// the lanes swapped: each gateway then carries every request once, under the same mixed load, so
// their TTFT percentiles are over the same requests and each request's two TTFTs pair up. Per
// lane also the part of TTFT spent outside the engine: the client's TTFT minus the server's own
// (engine::submit to the first token), that is sending, parsing, tokenizing, and the first
// token's way back, measured per request and so free of queueing and batching noise.

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/household/runner.hpp"

namespace hearth::household {

struct transport_figures {
  std::string name;
  uint64_t done = 0;            //!< requests that ended `done` with a token
  dist_summary ttft_ms;         //!< the client's TTFT (from the scheduled arrival, as the report's)
  dist_summary server_ttft_ms;  //!< the server's (from its arrival at the engine)
  dist_summary outside_ms;      //!< client TTFT - server TTFT, per request
  dist_summary ttft_diff_ms;    //!< per request done on both: its TTFT here minus on the first lane
};

//! One entry per name: lane i's requests (`lanes[r][index] == i` in run r), over every run.
std::vector<transport_figures> compare_transports(std::span<const run_result> runs,
                                                  std::span<const std::vector<uint8_t>> lanes,
                                                  const std::vector<std::string>& names);
//! The table, and each lane's differences from the first lane.
void print_transports(const std::vector<transport_figures>& t, std::FILE* out);
nlohmann::json to_json(const std::vector<transport_figures>& t);

}  // namespace hearth::household
