#include "actors/supervisor.hpp"

namespace hearth {

void engine_health::fail(const std::string& why) {
  std::vector<std::function<void(const std::string&)>> told;
  {
    std::lock_guard lock(m_);
    if (failure_ || stopping_) return;
    failure_ = why;
    told = std::move(listeners_);
  }
  for (auto& l : told) l(why);
}

std::optional<std::string> engine_health::failure() const {
  std::lock_guard lock(m_);
  return failure_;
}

void engine_health::on_failure(std::function<void(const std::string&)> listener) {
  std::optional<std::string> failed;
  {
    std::lock_guard lock(m_);
    if (!failure_) {
      listeners_.push_back(std::move(listener));
      return;
    }
    failed = failure_;
  }
  listener(*failed);
}

void engine_health::stopping() {
  std::lock_guard lock(m_);
  stopping_ = true;
}

bool engine_health::is_stopping() const {
  std::lock_guard lock(m_);
  return stopping_;
}

namespace {

struct supervisor_state {
  std::vector<supervised> actors;
  scheduler_actor scheduler;
  std::shared_ptr<engine_health> health;
  static inline const char* name = "supervisor";
};

supervisor_actor::behavior_type supervisor(supervisor_actor::stateful_pointer<supervisor_state> self,
                                           std::vector<supervised> actors, scheduler_actor scheduler,
                                           std::shared_ptr<engine_health> health) {
  auto& st = self->state;
  st.actors = std::move(actors);
  st.scheduler = std::move(scheduler);
  st.health = std::move(health);
  for (const auto& a : st.actors) self->monitor(a.actor);
  self->set_down_handler([self](const caf::down_msg& down) {
    auto& s = self->state;
    if (s.health->is_stopping()) return;
    std::string role = "an actor";
    for (const auto& a : s.actors)
      if (a.actor.address() == down.source) role = a.role;
    const std::string why = down_text(self->system(), role, down.reason);
    s.health->fail(why);
    // A scheduler still running holds every request: it ends them (and then stops itself).
    if (down.source != s.scheduler.address()) self->send(s.scheduler, fail_atom::value, why);
  });
  return {[](ready_atom) {}};
}

}  // namespace

supervisor_actor spawn_supervisor(caf::actor_system& sys, std::vector<supervised> actors,
                                  scheduler_actor scheduler, std::shared_ptr<engine_health> health) {
  return sys.spawn(supervisor, std::move(actors), std::move(scheduler), std::move(health));
}

}  // namespace hearth
