#pragma once
// The scheduler's loop over its workers, without actors or a clock of its own: one lane per
// worker (colocated, one lane of mixed steps; disaggregated, a prefill lane and a decode lane),
// each with at most one step in flight. The scheduler actor drives it on messages and the
// steady clock, the simulator (sim/) on a virtual clock: the steps are the same code's either way.

#include <optional>
#include <vector>

#include "core/config.hpp"
#include "core/scheduler_core.hpp"
#include "core/step.hpp"

namespace hearth {

class step_lanes {
 public:
  explicit step_lanes(placement_mode mode);

  size_t size() const { return lanes_.size(); }
  step_kind kind(size_t lane) const { return lanes_[lane].kind; }
  const std::optional<step>& in_flight(size_t lane) const { return lanes_[lane].in_flight; }

  //! Plans a step on every idle lane for which something can run now; the lanes started, in
  //! order (each one's step is its in_flight()).
  std::vector<size_t> start(scheduler_core& core, double now_s);
  //! Applies the lane's step, computed (r.error empty) or failed, to `core`, and frees the lane.
  void finish(size_t lane, const step_result& r, scheduler_core& core, double now_s,
              std::vector<request_event>& events);

 private:
  struct lane_state {
    step_kind kind;
    std::optional<step> in_flight;
  };
  std::vector<lane_state> lanes_;
};

}  // namespace hearth
