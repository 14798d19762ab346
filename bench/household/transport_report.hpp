#pragma once
// What each gateway costs, from a run whose requests alternated between them (split_target.hpp):
// per lane, the client's TTFT and the part of it spent outside the engine, the client's TTFT
// minus the server's own (engine::submit to the first token): sending, parsing, tokenizing, and
// the first token's way back. That part is measured per request, so it is free of the queueing
// and batching noise that two sets of requests' TTFTs differ by.

#include <cstdint>
#include <cstdio>
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
};

//! One entry per name: lane i's requests (`lane_of[index] == i`).
std::vector<transport_figures> compare_transports(const run_result& run, const std::vector<uint8_t>& lane_of,
                                                  const std::vector<std::string>& names);
//! The table, and each lane's difference from the first lane's p50s.
void print_transports(const std::vector<transport_figures>& t, std::FILE* out);
nlohmann::json to_json(const std::vector<transport_figures>& t);

}  // namespace hearth::household
