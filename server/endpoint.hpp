#pragma once
// The ZeroMQ endpoint the gateway binds: what may be bound in development mode.

#include <string_view>

namespace hearth::server {

//! Whether a development-mode server may bind `endpoint`: ipc://, or tcp:// on a loopback
//! address (127.x.x.x, ::1, localhost, lo).
bool is_local_endpoint(std::string_view endpoint);

}  // namespace hearth::server
