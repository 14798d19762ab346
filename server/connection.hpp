#pragma once
// Who is on the other end of one ZeroMQ connection. The gateway's ZAP handler authenticates
// every handshake (CURVE and development mode alike) and hands libzmq a User-Id that names the
// connection: a serial number no other connection of this gateway ever gets, the client's CURVE
// key and the tenant that key belonged to. libzmq stamps that User-Id on every message the
// connection sends, so a message always says which connection sent it, even when a new
// connection has taken an old one's routing id (docs/architecture.md, "Gateway").

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tenants/tenant_config.hpp"

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

//! The ZAP handler's decisions (RFC 27), without sockets: which handshakes open a connection,
//! and which connections a tenant table still lets in.
class authenticator {
 public:
  //! `curve`: CURVE handshakes with a listed key; else (development mode) NULL ones, all of them.
  explicit authenticator(bool curve) : curve_(curve) {}
  void set_tenants(const std::vector<tenant_config>& tenants);
  //! A ZAP request's frames ([version, request id, domain, address, routing id, mechanism,
  //! credentials...]): the connection it opens, with a fresh serial, or nullopt to refuse it.
  std::optional<connection> authenticate(std::span<const std::string_view> request);
  //! Under CURVE, whether c's key is still listed for the tenant it authenticated as.
  bool listed(const connection& c) const;
  //! For the log, a handshake authenticate refused: its peer's address and what it offered
  //! ("from 10.0.0.7: CURVE key K is listed for no tenant").
  std::string describe_refusal(std::span<const std::string_view> request) const;

 private:
  bool curve_;
  std::map<std::string, std::string> key_to_tenant_;  // Z85 public key -> tenant name
  uint64_t next_serial_ = 1;
};

}  // namespace hearth::server
