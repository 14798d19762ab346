#pragma once
// What the process running an engine hears from it, besides each request's events (engine.hpp).
// `alive`: a liveness signal from the engine's own loop, for a service manager's watchdog
// (systemd's WATCHDOG=1): `ping` runs every `every` from the scheduler while the engine works,
// and stops when a step has run past engine_config::step_timeout_ms (a hung backend) or the
// engine has failed; a timer thread could not tell, it would keep pinging for a stuck engine.
// `request_end`: each request's record as it ends, for a log line (refusals at admission
// included, with only tenant, kind and reason set). `step_end`: each step that succeeded and its
// round trip (sent to the worker to its result back), for a profile's calibration on the steps
// a server really runs (sim/step_profile.hpp). `worker_change`: a sentence when a worker in
// another process is lost or joins again, for the log. All run on an actor thread and must not
// block.

#include <chrono>
#include <functional>

#include "core/scheduler_core.hpp"

namespace hearth {

struct keep_alive {
  std::chrono::milliseconds every{0};  //!< 0: no pings
  std::function<void()> ping;
};

struct engine_hooks {
  keep_alive alive;
  std::function<void(const request_record&)> request_end;           //!< empty: none
  std::function<void(const step&, double round_trip_ms)> step_end;  //!< empty: none
  std::function<void(const std::string&)> worker_change = {};       //!< empty: none
};

}  // namespace hearth
