#include "core/step_lanes.hpp"

namespace hearth {

step_lanes::step_lanes(placement_mode mode) {
  if (mode == placement_mode::disaggregated)
    lanes_ = {{step_kind::prefill, {}}, {step_kind::decode, {}}};
  else
    lanes_ = {{step_kind::mixed, {}}};
}

std::vector<size_t> step_lanes::start(scheduler_core& core, double now_s) {
  std::vector<size_t> started;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    lane_state& l = lanes_[i];
    if (l.in_flight || !core.has_work()) continue;
    step s = core.plan(now_s, l.kind);
    if (s.seqs.empty()) continue;
    l.in_flight = std::move(s);
    started.push_back(i);
  }
  return started;
}

void step_lanes::finish(size_t lane, const step_result& r, scheduler_core& core, double now_s,
                        std::vector<request_event>& events) {
  std::optional<step>& s = lanes_[lane].in_flight;
  if (r.error.empty())
    core.complete(*s, r, now_s, events);
  else
    core.abort(*s, r.error, now_s, events);
  s.reset();
}

}  // namespace hearth
