#include "server/connection.hpp"

#include <charconv>

#include <zmq.h>

namespace hearth::server {

std::string to_user_id(const connection& c) {
  std::string id = std::to_string(c.serial);
  if (!c.key.empty()) id += " " + c.key + " " + c.tenant;
  return id;
}

std::optional<connection> from_user_id(std::string_view user_id) {
  connection c;
  const size_t space = user_id.find(' ');
  const std::string_view serial = user_id.substr(0, space);
  const auto [end, ec] = std::from_chars(serial.data(), serial.data() + serial.size(), c.serial);
  if (ec != std::errc() || end != serial.data() + serial.size() || c.serial == 0) return std::nullopt;
  if (space == std::string_view::npos) return c;
  const std::string_view rest = user_id.substr(space + 1);
  const size_t second = rest.find(' ');
  if (second == std::string_view::npos || second == 0 || second + 1 == rest.size()) return std::nullopt;
  c.key = rest.substr(0, second);
  c.tenant = rest.substr(second + 1);
  return c;
}

void authenticator::set_tenants(const std::vector<tenant_config>& tenants) {
  key_to_tenant_.clear();
  for (const auto& t : tenants)
    if (!t.key.empty()) key_to_tenant_[t.key] = t.name;
}

std::optional<connection> authenticator::authenticate(std::span<const std::string_view> request) {
  if (request.size() < 6 || request[0] != "1.0") return std::nullopt;
  const std::string_view mechanism = request[5];
  if (!curve_) {
    if (mechanism != "NULL") return std::nullopt;
    return connection{.serial = next_serial_++};
  }
  if (mechanism != "CURVE" || request.size() < 7 || request[6].size() != 32) return std::nullopt;
  char z85[41];
  zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(request[6].data()), 32);
  const auto it = key_to_tenant_.find(z85);
  if (it == key_to_tenant_.end()) return std::nullopt;
  return connection{.serial = next_serial_++, .key = z85, .tenant = it->second};
}

std::string authenticator::describe_refusal(std::span<const std::string_view> request) const {
  std::string why = "from ";
  why.append(request.size() > 3 && !request[3].empty() ? request[3] : std::string_view("an unknown address"));
  const std::string_view mechanism = request.size() > 5 ? request[5] : std::string_view();
  if (curve_ && mechanism == "CURVE" && request.size() > 6 && request[6].size() == 32) {
    char z85[41];
    zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(request[6].data()), 32);
    why += ": CURVE key ";
    why += z85;
    why += " is listed for no tenant";
  } else {
    why += ": a ";
    why.append(mechanism.empty() ? std::string_view("malformed") : mechanism);
    why += curve_ ? " handshake (no CURVE key: the client lacks the server's key)"
                  : " handshake to a development-mode server (no keys)";
  }
  return why;
}

bool authenticator::listed(const connection& c) const {
  if (!curve_) return true;
  const auto it = key_to_tenant_.find(c.key);
  return it != key_to_tenant_.end() && it->second == c.tenant;
}

}  // namespace hearth::server
