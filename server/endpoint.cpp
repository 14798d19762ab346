#include "server/endpoint.hpp"

namespace hearth::server {

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

}  // namespace hearth::server
