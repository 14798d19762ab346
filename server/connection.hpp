#pragma once
// Who is on the other end of one ZeroMQ connection. The gateway's ZAP handler authenticates
// every handshake (CURVE and development mode alike) and hands libzmq a User-Id that names the
// connection: a serial number no other connection of this gateway ever gets, the client's CURVE
// key and the tenant that key belonged to. libzmq stamps that User-Id on every message the
// connection sends, so a message always says which connection sent it, even when a new
// connection has taken an old one's routing id (docs/architecture.md, "Gateway").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hearth::server {

struct connection {
  uint64_t serial = 0;      //!< 1, 2, ... in handshake order; never reused by a gateway
  std::string key = {};     //!< CURVE: the client's public key (Z85); "" in development mode
  std::string tenant = {};  //!< CURVE: the tenant the key was listed for; "" in development mode

  bool operator==(const connection&) const = default;
};

//! The User-Id text for a ZAP reply: "serial[ key tenant]" (neither Z85 nor tenant names
//! contain a space).
std::string to_user_id(const connection& c);
//! The connection a User-Id names; nullopt for text this gateway did not write.
std::optional<connection> from_user_id(std::string_view user_id);

}  // namespace hearth::server
