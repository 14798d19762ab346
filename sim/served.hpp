#pragma once
// What a real server served, kept to calibrate a step profile on later (calibrated(),
// with_request_path()): the steps it ran, each shape with its round trip and the idle time before
// it, and its requests' TTFT beyond the server's split of it. `hearth bench serve --served-out`
// writes one; `hearth bench calibrate` fits a profile to one or more, so that a simulation can
// follow the minutes its real runs came in (this VM's memory has spells of minutes, and a
// profile agrees with the runs of its own).

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "sim/step_profile.hpp"

namespace hearth::sim {

struct served_log {
  std::vector<profile_point> steps;
  std::vector<request_path> requests;
};

//! Steps heard one after another on one lane (engine_hooks::step_end, on the scheduler's thread):
//! each with the idle time between the last one's end and its start, 1e9 for the first.
class step_recorder {
 public:
  void add(const step& s, double ms, std::chrono::steady_clock::time_point end);
  std::vector<profile_point>& steps() { return steps_; }

 private:
  std::vector<profile_point> steps_;
  std::chrono::steady_clock::time_point last_end_ = std::chrono::steady_clock::time_point::min();
};

std::string to_json(const served_log& log);
//! `source` names the text in errors ("run.json: steps[3] ...").
result<served_log> served_from_json(std::string_view text, std::string_view source);
result<served_log> load_served(const std::string& path);

}  // namespace hearth::sim
