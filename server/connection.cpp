#include "server/connection.hpp"

#include <charconv>

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

}  // namespace hearth::server
