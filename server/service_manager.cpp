#include "server/service_manager.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include <systemd/sd-daemon.h>

namespace hearth::server {

namespace {

// unset_environment = 0: the engine's threads keep NOTIFY_SOCKET for their own notifications.
void notify(const std::string& state) {
  sd_notify(0, state.c_str());
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
  notify("WATCHDOG=1");
}

std::chrono::milliseconds watchdog_ping_period() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0) return std::chrono::milliseconds{0};
  return std::chrono::milliseconds{std::max<uint64_t>(1, usec / 2000)};
}

}  // namespace hearth::server
