#pragma once
// The ZeroMQ endpoint the gateway binds, checked before libzmq sees it: libzmq turns some
// mistakes into a bind that works, somewhere else. The configuration file checks the text at
// load (with its line); the gateway checks again at bind, for --endpoint and programmatic callers.

#include <string_view>

#include "common/result.hpp"

namespace hearth::server {

//! Whether a development-mode server may bind `endpoint`: ipc://, or tcp:// on a loopback
//! address (127.x.x.x, ::1, localhost, lo).
bool is_local_endpoint(std::string_view endpoint);

//! A tcp:// endpoint ends in `:PORT`, PORT a decimal number from 1 to 65535, or `*` or `0` for
//! a free port. libzmq reads the port with atoi and keeps 16 bits, so `99999` binds 34463, `-1`
//! 65535 and `80x` 80. An endpoint without a scheme is refused with a guess (endpoint_mistake
//! in common/endpoint_mistake.hpp); ipc:// and inproc:// pass. The message begins with the endpoint, for the
//! caller to put its own context (the field, the flag) in front.
status<> check_endpoint_port(std::string_view endpoint);

//! Everything bind needs to know first: check_endpoint_port, and for ipc://PATH that no server
//! accepts connections on PATH and that PATH, if it exists, is a socket. libzmq unlinks PATH
//! before it binds, whatever it is: a live server's socket (that server is then unreachable for
//! good) or a regular file. A socket that refuses connections is a crashed server's and may be
//! reclaimed. Another process may still take the path between this check and the bind.
status<> check_bindable(std::string_view endpoint);

//! A server without a key (development mode) binds only where is_local_endpoint says.
status<> check_development_endpoint(std::string_view endpoint);

}  // namespace hearth::server
