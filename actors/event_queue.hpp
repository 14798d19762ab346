#pragma once
// A sink whose events wait in a queue for the caller's own thread: how the bench and the tests
// take a request's events one by one, with a timeout, without an actor of their own.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "actors/engine.hpp"

namespace hearth {

class event_queue {
 public:
  explicit event_queue(engine& e)
      : sink_(e.open_sink([s = state_](request_event& ev) { s->push(std::move(ev)); })) {}
  //! Where to submit the requests whose events come here.
  const event_sink& sink() const { return *sink_; }
  //! The next event, or nullopt once `timeout` has passed without one.
  std::optional<request_event> next(std::chrono::milliseconds timeout) { return state_->pop(timeout); }

 private:
  // Shared with the sink's callback, which may run once more while the queue goes away.
  struct state {
    std::mutex m;
    std::condition_variable cv;
    std::deque<request_event> events;
    void push(request_event&& e) {
      {
        std::lock_guard lock(m);
        events.push_back(std::move(e));
      }
      cv.notify_one();
    }
    std::optional<request_event> pop(std::chrono::milliseconds timeout) {
      std::unique_lock lock(m);
      if (!cv.wait_for(lock, timeout, [&] { return !events.empty(); })) return std::nullopt;
      request_event e = std::move(events.front());
      events.pop_front();
      return e;
    }
  };
  std::shared_ptr<state> state_ = std::make_shared<state>();
  std::unique_ptr<event_sink> sink_;
};

}  // namespace hearth
