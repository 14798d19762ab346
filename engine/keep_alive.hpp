#pragma once
// A liveness signal from the engine's own loop, for a service manager's watchdog (systemd's
// WATCHDOG=1): `ping` runs every `every` from the scheduler while the engine works, and stops when
// a step has run past engine_config::step_timeout_ms (a hung backend) or the engine has failed.
// A timer thread could not tell: it would keep pinging for a stuck engine.

#include <chrono>
#include <functional>

namespace hearth {

struct keep_alive {
  std::chrono::milliseconds every{0};  //!< 0: no pings
  std::function<void()> ping;          //!< from an actor thread; must not block
};

}  // namespace hearth
