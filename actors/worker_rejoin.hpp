#pragma once
// A worker in another process that was lost (it died, was stopped, or its connection broke) is
// asked again every few seconds until it answers: a restarted `hearth worker`, or one back on the
// network, joins its server again without a restart of the server. Each attempt first checks
// that the port accepts a TCP connection within a second, so an unreachable host never holds the
// attempt (or the engine's shutdown) for the kernel's connect timeout.

#include <cstddef>

#include "actors/messages.hpp"
#include "actors/worker_join.hpp"
#include "core/config.hpp"

namespace hearth {

//! Spawns the attempts for the scheduler's worker group `group`: once the worker at `at` joins
//! (with `hello`) and takes the scheduler, the scheduler gets (join_atom, group, the worker, its
//! info). The attempts end with that, or when the scheduler stops.
void spawn_rejoin(caf::actor_system& sys, worker_endpoint at, join_hello hello, scheduler_actor scheduler,
                  size_t group);

//! Whether host:port accepts a TCP connection within `timeout_ms`.
bool accepts_connections(const std::string& host, uint16_t port, int timeout_ms);

}  // namespace hearth
