#pragma once
// cpp-httplib's server with a listen backlog fit for bursts of connections. cpp-httplib 0.11.4
// listens with a backlog of 5: 64 clients connecting at once (a household's streams after a
// restart, the bench's end-to-end test) overflow the accept queue, and the kernel drops their
// handshakes (TcpExtListenOverflows): a client then waits a second for its SYN to be retried, or
// fails reading its reply. Found by tests/test_http_bench.cpp; fixed by listening again on the
// bound socket, which on Linux changes its backlog.
#include <sys/socket.h>

#include <httplib.h>

namespace hearth::http {

class http_server final : public httplib::Server {
 public:
  //! After a bind: the kernel's largest backlog (SOMAXCONN, capped by net.core.somaxconn).
  bool widen_backlog() { return ::listen(svr_sock_, SOMAXCONN) == 0; }
};

}  // namespace hearth::http
