#include "bench/household/trace.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "common/text_file.hpp"

namespace hearth::household {

namespace {

constexpr uint64_t max_tokens_limit = 1u << 20;

// The entry of one line, or the reason it is not one.
result<trace_entry> read_line(std::string_view line) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return error{errc::malformed, "not a JSON object"};
  for (const auto& [k, v] : j.items()) {
    if (k != "time" && k != "tenant" && k != "prompt" && k != "prompt_tokens" && k != "max_tokens")
      return error{errc::malformed, "unknown field '" + k + "'"};
  }
  trace_entry e;
  if (!j.contains("time") || !j["time"].is_number())
    return error{errc::malformed, "time: a number of seconds is required"};
  e.time_s = j["time"].get<double>();
  if (!std::isfinite(e.time_s) || e.time_s < 0) return error{errc::malformed, "time: must be >= 0"};
  if (!j.contains("tenant") || !j["tenant"].is_string())
    return error{errc::malformed, "tenant: a string is required"};
  e.tenant = j["tenant"].get<std::string>();
  auto count = [&](const char* field) -> result<uint32_t> {
    const auto& v = j[field];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<uint64_t>() > max_tokens_limit)
      return error{errc::malformed, std::string(field) + ": must be a whole number from 1 to " +
                                        std::to_string(max_tokens_limit)};
    return v.get<uint32_t>();
  };
  if (j.contains("prompt") == j.contains("prompt_tokens"))
    return error{errc::malformed, "exactly one of prompt and prompt_tokens is required"};
  if (j.contains("prompt")) {
    if (!j["prompt"].is_string() || j["prompt"].get<std::string>().empty())
      return error{errc::malformed, "prompt: must be a non-empty string"};
    e.prompt = j["prompt"].get<std::string>();
  } else {
    auto n = count("prompt_tokens");
    if (!n) return n.error();
    e.prompt_tokens = *n;
  }
  if (!j.contains("max_tokens")) return error{errc::malformed, "max_tokens: required"};
  auto m = count("max_tokens");
  if (!m) return m.error();
  e.max_tokens = *m;
  return e;
}

}  // namespace

result<std::vector<trace_entry>> parse_trace(std::string_view jsonl, std::string_view source) {
  std::vector<trace_entry> out;
  size_t line_no = 0;
  while (!jsonl.empty()) {
    ++line_no;
    const size_t end = jsonl.find('\n');
    std::string_view line = jsonl.substr(0, end);
    jsonl = end == std::string_view::npos ? std::string_view{} : jsonl.substr(end + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto e = read_line(line);
    if (!e)
      return error{errc::malformed,
                   std::string(source) + ":" + std::to_string(line_no) + ": " + e.error().message};
    out.push_back(std::move(*e));
  }
  if (out.empty()) return error{errc::malformed, std::string(source) + ": no requests"};
  std::ranges::stable_sort(out, {}, &trace_entry::time_s);
  return out;
}

result<std::vector<trace_entry>> load_trace(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return parse_trace(*text, path);
}

}  // namespace hearth::household
