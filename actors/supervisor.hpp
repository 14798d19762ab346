#pragma once
// The supervisor: monitors every other actor of an engine. An actor that stops while the engine
// is not shutting down means the engine has failed: the supervisor records why (engine_health),
// tells the listeners once, and asks the scheduler, if it still runs, to end every request with
// error `internal`. Nothing is restarted: a half-dead engine serving on would hide the fault.

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/messages.hpp"

namespace hearth {

//! What an engine knows of its own failure; shared by the engine and its supervisor.
struct engine_health {
  //! The first failure wins; later ones are not news. Calls the listeners outside the lock.
  void fail(const std::string& why);
  std::optional<std::string> failure() const;
  //! Calls `listener` now if the engine has failed, else once when it does.
  void on_failure(std::function<void(const std::string&)> listener);
  //! From now on actors stopping are the engine's own shutdown, not a failure.
  void stopping();
  bool is_stopping() const;

 private:
  mutable std::mutex m_;
  std::optional<std::string> failure_;
  std::vector<std::function<void(const std::string&)>> listeners_;
  bool stopping_ = false;
};

struct supervised {
  std::string role;  //!< "scheduler", "worker", ... as the failure names it
  caf::actor actor;
};

supervisor_actor spawn_supervisor(caf::actor_system& sys, std::vector<supervised> actors,
                                  scheduler_actor scheduler, std::shared_ptr<engine_health> health);

}  // namespace hearth
