#pragma once
// `hearth serve`'s messages to its service manager over sd_notify(3): readiness, status lines,
// stopping, and the watchdog's pings. Each is a no-op without NOTIFY_SOCKET (not run by systemd
// with Type=notify), so the same binary serves in a terminal.

#include <chrono>
#include <string_view>

namespace hearth::server {

//! STATUS=<line>: what `systemctl status` shows while loading, and the summary once ready.
void notify_status(std::string_view line);
//! READY=1 with its STATUS: the model is loaded and every endpoint is bound.
void notify_ready(std::string_view status);
//! STOPPING=1: the drain has begun; the process ends within `within`, which extends the service
//! manager's stop timeout (EXTEND_TIMEOUT_USEC; systemd keeps TimeoutStopSec when it is longer).
void notify_stopping(std::chrono::seconds within);
//! WATCHDOG=1, dropped rather than waited on when the manager's queue is full: it is sent
//! from the engine's loop, which must not block.
void notify_watchdog();
//! Half the watchdog interval systemd asked this process for (WatchdogSec=, WATCHDOG_USEC), the
//! period to ping at; 0 when no watchdog is asked for.
std::chrono::milliseconds watchdog_ping_period();

}  // namespace hearth::server
