#include "sim/served.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/text_file.hpp"

namespace hearth::sim {

using json = nlohmann::json;

void step_recorder::add(const step& s, double ms, std::chrono::steady_clock::time_point end) {
  profile_point pt = shape_of(s);
  pt.ms = ms;
  pt.idle_ms = last_end_ == std::chrono::steady_clock::time_point::min()
                   ? 1e9
                   : std::max(0.0, std::chrono::duration<double, std::milli>(end - last_end_).count() - ms);
  last_end_ = end;
  steps_.push_back(pt);
}

std::string to_json(const served_log& log) {
  // Rows, not objects: a run serves thousands of steps.
  json steps = json::array(), requests = json::array();
  for (const auto& s : log.steps)
    steps.push_back({s.tokens, s.seqs, s.decode_kpairs, s.prefill_kpairs, s.ms, s.idle_ms});
  for (const auto& r : log.requests) requests.push_back({r.prompt_tokens, r.ms});
  const json j = {{"steps_columns", {"tokens", "seqs", "decode_kpairs", "prefill_kpairs", "ms", "idle_ms"}},
                  {"steps", steps},
                  {"requests_columns", {"prompt_tokens", "ms"}},
                  {"requests", requests}};
  return j.dump() + "\n";
}

result<served_log> served_from_json(std::string_view text, std::string_view source) {
  const std::string where(source);
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return error{errc::malformed, where + ": not a JSON object"};
  served_log log;
  std::string field = "steps";
  size_t i = 0;
  try {
    for (const auto& s : j.at("steps")) {
      profile_point pt{s.at(0).get<uint32_t>(), s.at(1).get<uint32_t>(), s.at(2).get<double>(),
                       s.at(3).get<double>(),   s.at(4).get<double>(),   s.at(5).get<double>()};
      if (pt.tokens == 0 || pt.seqs == 0 || pt.seqs > pt.tokens || !(pt.ms > 0) || pt.decode_kpairs < 0 ||
          pt.prefill_kpairs < 0 || pt.idle_ms < 0)
        return error{errc::malformed, where + ": steps[" + std::to_string(i) + "] is not a step"};
      log.steps.push_back(pt);
      ++i;
    }
    field = "requests", i = 0;
    for (const auto& r : j.at("requests")) {
      log.requests.push_back({r.at(0).get<uint32_t>(), r.at(1).get<double>()});
      ++i;
    }
  } catch (const json::exception& e) {
    return error{errc::malformed, where + ": " + field + "[" + std::to_string(i) + "]: " + e.what()};
  }
  return log;
}

result<served_log> load_served(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return served_from_json(*text, path);
}

}  // namespace hearth::sim
