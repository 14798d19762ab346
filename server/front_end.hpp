#pragma once
// What `hearth serve` asks of each of its front ends (the ZeroMQ gateway, the HTTP gateway)
// while it stops: the one contract both keep, so the drain treats them alike.

#include <chrono>

namespace hearth::server {

class front_end {
 public:
  virtual ~front_end() = default;
  //! From now on every new request is refused with `shutting_down`; requests in flight go on.
  virtual void drain() = 0;
  //! Whether some client still waits for a request's end: what a drain waits for.
  virtual bool busy() const = 0;
  //! Drains, waits up to `grace` for every request in flight to end, ends the rest with
  //! `shutting_down`, and lets go of the engine (which may then be destroyed). Idempotent.
  virtual void stop(std::chrono::milliseconds grace) = 0;
};

}  // namespace hearth::server
