#pragma once
// A trace to replay instead of generated arrivals: JSON Lines, one request per line,
//   {"time": 0.25, "tenant": "chat", "prompt": "Lights off?", "max_tokens": 32}
//   {"time": 1.5, "tenant": "rag", "prompt_tokens": 2048, "max_tokens": 128}
// time: seconds from the start of the run; tenant: a class of the workload (its SLOs apply);
// exactly one of prompt (text, sent as is) or prompt_tokens (synthesised to that length).
// Empty lines are skipped; unknown fields are refused, as the wire protocol does.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace hearth::household {

struct trace_entry {
  double time_s = 0;
  std::string tenant;
  std::optional<std::string> prompt;
  uint32_t prompt_tokens = 0;  //!< when there is no prompt text
  uint32_t max_tokens = 0;
};

//! Entries sorted by time (stable); errors name `source` and the line.
result<std::vector<trace_entry>> parse_trace(std::string_view jsonl, std::string_view source = "trace");
result<std::vector<trace_entry>> load_trace(const std::string& path);

}  // namespace hearth::household
