// String rules and plain POSIX calls, no ZeroMQ: what libzmq would do with an endpoint is
// decided here before it is asked to bind.
#include "server/endpoint.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "common/endpoint_mistake.hpp"

namespace hearth::server {

namespace {

constexpr std::string_view tcp_scheme = "tcp://", ipc_scheme = "ipc://";

// The port text of a tcp:// address (the endpoint without its scheme), split where libzmq
// splits it: at the last ':', which for `[v6 address]:port` must follow the ']'.
std::optional<std::string_view> port_text(std::string_view address) {
  size_t host_end = 0;
  if (address.starts_with('[')) {
    host_end = address.find(']');
    if (host_end == std::string_view::npos) return std::nullopt;
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon < host_end) return std::nullopt;
  return address.substr(colon + 1);
}

bool is_port(std::string_view port) {
  if (port == "*" || port == "0") return true;  // a free port, picked by the kernel
  if (port.empty() || port.find_first_not_of("0123456789") != std::string_view::npos) return false;
  uint32_t value = 0;
  for (const char digit : port) {
    value = value * 10 + static_cast<uint32_t>(digit - '0');
    if (value > 65535) return false;  // stops before a long run of digits can overflow
  }
  return value >= 1;
}

// The file at ipc://PATH, if any: a live server's socket, a stale one, or something else.
status<> check_ipc_path(std::string_view endpoint) {
  const std::string path(endpoint.substr(ipc_scheme.size()));
  // `@name` is Linux's abstract namespace: no file to delete, and a name in use fails to bind.
  // `*` asks libzmq for a fresh path of its own.
  if (path.empty() || path.starts_with('@') || path == "*") return {};
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};  // nothing there, or unreachable: bind says why
  if (!S_ISSOCK(st.st_mode))
    return error{errc::io,
                 std::string(endpoint) +
                     ": the path exists and is not a socket (binding would delete it): choose another path"};
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return {};  // no socket can have this name: bind fails
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // Non-blocking: a listener with a full backlog answers EAGAIN at once instead of making us wait.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return error{errc::io, "cannot check " + std::string(endpoint) + ": " + std::strerror(errno)};
  const int err = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 ? 0 : errno;
  ::close(fd);
  if (err == ECONNREFUSED || err == ENOENT) return {};  // a crashed server's socket, or gone meanwhile
  if (err == 0 || err == EAGAIN)
    return error{errc::io, "another server is listening on " + std::string(endpoint) +
                               ": stop it first, or bind another path"};
  // EACCES, EPROTOTYPE (a datagram socket)...: someone's socket, not ours to replace.
  return error{errc::io, "cannot tell whether " + std::string(endpoint) + " is in use (" +
                             std::strerror(err) + "): not replacing it"};
}

}  // namespace

bool is_local_endpoint(std::string_view endpoint) {
  if (endpoint.starts_with("ipc://")) return endpoint.size() > 6;
  if (!endpoint.starts_with("tcp://")) return false;
  const std::string_view rest = endpoint.substr(6);
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || rest.find(';') != std::string_view::npos) return false;
  std::string_view host = rest.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost" || host == "::1" || host == "lo") return true;
  if (!host.starts_with("127.")) return false;
  return host.find_first_not_of("0123456789.") == std::string_view::npos;
}

status<> check_endpoint_port(std::string_view endpoint) {
  if (auto mistake = endpoint_mistake(endpoint)) return error{errc::invalid_argument, *mistake};
  if (!endpoint.starts_with(tcp_scheme)) return {};
  const auto port = port_text(endpoint.substr(tcp_scheme.size()));
  if (!port || port->empty())
    return error{
        errc::invalid_argument,
        std::string(endpoint) + ": no port (write tcp://HOST:PORT, or tcp://HOST:* for a free port)"};
  if (!is_port(*port))
    return error{errc::invalid_argument,
                 std::string(endpoint) + ": port " + std::string(*port) +
                     " is not a decimal number from 1 to 65535 (or * or 0 for a free port)"};
  return {};
}

status<> check_bindable(std::string_view endpoint) {
  if (auto st = check_endpoint_port(endpoint); !st)
    return error{st.error().code, "endpoint " + st.error().message};
  if (endpoint.starts_with(ipc_scheme)) return check_ipc_path(endpoint);
  return {};
}

status<> check_development_endpoint(std::string_view endpoint) {
  if (is_local_endpoint(endpoint)) return {};
  return error{errc::invalid_argument, "endpoint " + std::string(endpoint) +
                                           ": without a server key (development mode) only loopback "
                                           "tcp:// or ipc:// endpoints are allowed"};
}

}  // namespace hearth::server
