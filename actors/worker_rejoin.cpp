#include "actors/worker_rejoin.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "actors/worker.hpp"

namespace hearth {

namespace {

constexpr auto rejoin_every = std::chrono::seconds(2);
constexpr int probe_timeout_ms = 1000;

bool connects(const addrinfo& a, int timeout_ms) {
  const int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a.ai_protocol);
  if (fd < 0) return false;
  bool ok = ::connect(fd, a.ai_addr, a.ai_addrlen) == 0;
  if (!ok && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    ok =
        ::poll(&p, 1, timeout_ms) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
  ::close(fd);
  return ok;
}

void rejoin(caf::blocking_actor* self, const worker_endpoint& at, const join_hello& hello,
            const scheduler_actor& scheduler, size_t group) {
  self->monitor(scheduler);
  bool done = false;
  while (!done) {
    self->receive(
        [&](const caf::down_msg&) { done = true; },
        caf::after(rejoin_every) >>
            [&] {
              if (!accepts_connections(at.host, at.port, probe_timeout_ms)) return;
              auto joined = join_remote_worker(self->system(), at, hello);
              if (!joined) return;
              auto& [worker, info] = *joined;
              if (!attach_remote_worker(self->system(), worker, at, caf::actor_cast<caf::actor>(scheduler)))
                return;
              self->send(scheduler, join_atom::value, group, worker, info);
              done = true;
            });
  }
}

}  // namespace

bool accepts_connections(const std::string& host, uint16_t port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  bool ok = false;
  for (const addrinfo* a = found; a && !ok; a = a->ai_next) ok = connects(*a, timeout_ms);
  ::freeaddrinfo(found);
  return ok;
}

void spawn_rejoin(caf::actor_system& sys, worker_endpoint at, join_hello hello, scheduler_actor scheduler,
                  size_t group) {
  sys.spawn<caf::detached>(rejoin, std::move(at), std::move(hello), std::move(scheduler), group);
}

}  // namespace hearth
