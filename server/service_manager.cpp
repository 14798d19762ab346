#include "server/service_manager.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

namespace hearth::server {

namespace {

// unset_environment = 0: the engine's threads keep NOTIFY_SOCKET for their own notifications.
void notify(const std::string& state) {
  sd_notify(0, state.c_str());
}

// The same datagram sd_notify sends, but never waiting: sd_notify blocks while the socket's
// queue is full (net.unix.max_dgram_qlen, 10 by default), and the watchdog's ping runs on the
// engine's loop, which a service manager that stopped reading would then stop too. A ping
// that finds the queue full is dropped: a manager that reads none would not see it anyway.
void notify_without_waiting(std::string_view state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  sockaddr_un to{};
  to.sun_family = AF_UNIX;
  const size_t n = path ? std::strlen(path) : 0;
  if (n < 2 || n >= sizeof to.sun_path || (path[0] != '/' && path[0] != '@')) return;
  std::memcpy(to.sun_path, path, n);
  if (path[0] == '@') to.sun_path[0] = '\0';  // an abstract socket's name
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n);
  (void)sendto(fd, state.data(), state.size(), MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&to),
               length);
  close(fd);
}

}  // namespace

void notify_status(std::string_view line) {
  notify("STATUS=" + std::string(line));
}

void notify_ready(std::string_view status) {
  notify("READY=1\nSTATUS=" + std::string(status));
}

void notify_stopping(std::chrono::seconds within) {
  const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(within).count();
  notify("STOPPING=1\nEXTEND_TIMEOUT_USEC=" + std::to_string(usec) +
         "\nSTATUS=draining the requests in flight");
}

void notify_watchdog() {
  notify_without_waiting("WATCHDOG=1");
}

std::chrono::milliseconds watchdog_ping_period() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0) return std::chrono::milliseconds{0};
  return std::chrono::milliseconds{std::max<uint64_t>(1, usec / 2000)};
}

}  // namespace hearth::server
