#include "common/endpoint_mistake.hpp"

#include <array>

namespace hearth {

std::optional<std::string> endpoint_mistake(std::string_view endpoint) {
  static constexpr std::array<std::string_view, 3> schemes = {"tcp://", "ipc://", "inproc://"};
  for (const auto s : schemes)
    if (endpoint.starts_with(s)) return std::nullopt;
  if (endpoint.empty()) return "(empty): write tcp://HOST:PORT or ipc://PATH";
  std::string why(endpoint);
  if (endpoint.find("://") != std::string_view::npos) {
    why += ": ZeroMQ endpoints are tcp://HOST:PORT or ipc://PATH";
    if (endpoint.starts_with("http")) why += " (the HTTP APIs are `hearth serve --http HOST:PORT`)";
    return why;
  }
  why += " has no scheme: did you mean tcp://";
  // A bare port number means this machine.
  if (endpoint.find_first_not_of("0123456789") == std::string_view::npos) why += "127.0.0.1:";
  why.append(endpoint);
  why += "?";
  return why;
}

}  // namespace hearth
