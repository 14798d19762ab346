#pragma once
// What the HTTP gateway's server does before any route reads a request, where cpp-httplib 0.11.4
// falls short (each found by a test over a real socket, tests/test_http_bad_input.cpp):
// - a listen backlog of 5: 64 clients connecting at once overflowed the accept queue (the
//   kernel's TcpExtListenOverflows), and a client then waited a second for its SYN to be retried,
//   or failed reading its reply;
// - its body limit checks Content-Length only: a chunked body of any size, and a 10 KB gzip
//   body that inflates to 10 MB, reached the routes whole;
// - its own refusals (a request it cannot read, a URI over 8 KiB) carry no reason.
// Only the gateway (and the tests) include this header: it brings in <httplib.h>.
#include <sys/socket.h>

#include <cstddef>
#include <functional>
#include <string_view>

#include <httplib.h>

#include "server/http/api.hpp"

namespace hearth::http {

//! After a bind: the kernel's largest backlog (SOMAXCONN, capped by net.core.somaxconn), by
//! listening again on the bound socket, which on Linux changes its backlog. For an HTTPS server
//! (httplib::SSLServer) as for a plain one.
bool widen_backlog(httplib::Server& server);

//! A POST route that reads its body itself, decoded (chunked, gzip, brotli) and at most `limit`
//! bytes, then calls `handle` with the request holding it. A longer body is a 413, a body that
//! cannot be decoded a 400, a multipart form a 415, each with its body left to the server's error
//! handler. What is left of a refused body is never read into memory: cpp-httplib reads it as
//! the connection's next request, refuses that (400) and closes the connection.
httplib::Server::HandlerWithContentReader limited_body(
    size_t limit, std::function<void(const httplib::Request&, httplib::Response&)> handle);

//! The refusal behind a status cpp-httplib or limited_body set without a body (400, 413, 414,
//! 415), or an unknown route (404), naming why.
api_error front_door_error(int status, std::string_view method, std::string_view path);

}  // namespace hearth::http
