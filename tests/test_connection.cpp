// Who is on the other end of a connection: the ZAP handler's decisions and the User-Id that
// carries them onto every message, without sockets.
#include <catch2/catch.hpp>

#include <zmq.h>

#include "clients/cpp/keys.hpp"
#include "server/connection.hpp"

using namespace hearth;
using namespace hearth::server;

namespace {

// A ZAP request as libzmq sends it, for `mechanism` with the client key `key_z85` (or none).
std::vector<std::string> zap_request(std::string mechanism, const std::string& key_z85 = "") {
  std::vector<std::string> r = {"1.0", "7", "hearth", "127.0.0.1", "", std::move(mechanism)};
  if (!key_z85.empty()) {
    uint8_t key[32];
    REQUIRE(zmq_z85_decode(key, key_z85.c_str()));
    r.emplace_back(reinterpret_cast<const char*>(key), sizeof key);
  }
  return r;
}

std::optional<connection> ask(authenticator& a, const std::vector<std::string>& request) {
  const std::vector<std::string_view> frames(request.begin(), request.end());
  return a.authenticate(frames);
}

}  // namespace

TEST_CASE("a User-Id names its connection and nothing else reads as one", "[serve]") {
  const connection dev{.serial = 7};
  const connection curve{
      .serial = 12, .key = std::string(client::generate_key_pair()->public_key), .tenant = "voice"};
  CHECK(from_user_id(to_user_id(dev)) == dev);
  CHECK(from_user_id(to_user_id(curve)) == curve);
  for (const char* bad :
       {"", "0", "x", "7 ", "7 key", "7  voice", "7 key ", "-1", "18446744073709551616", "1x"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(from_user_id(bad));
  }
}

TEST_CASE("the ZAP handler opens a fresh connection per handshake for listed keys only", "[serve]") {
  const auto voice = *client::generate_key_pair(), docs = *client::generate_key_pair(),
             stranger = *client::generate_key_pair();
  authenticator curve(true);
  curve.set_tenants({{.name = "voice", .key = voice.public_key}, {.name = "docs", .key = docs.public_key}});
  const auto a = ask(curve, zap_request("CURVE", voice.public_key));
  const auto b = ask(curve, zap_request("CURVE", voice.public_key));
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->tenant == "voice");
  CHECK(a->key == voice.public_key);
  CHECK(a->serial != b->serial);  // the same key twice: two connections
  CHECK_FALSE(ask(curve, zap_request("CURVE", stranger.public_key)));
  CHECK_FALSE(ask(curve, zap_request("NULL")));
  CHECK_FALSE(ask(curve, zap_request("PLAIN")));
  auto wrong_version = zap_request("CURVE", voice.public_key);
  wrong_version[0] = "2.0";
  CHECK_FALSE(ask(curve, wrong_version));
  CHECK_FALSE(ask(curve, {"1.0", "7"}));
  // A reload that drops the key, or gives the tenant another, revokes what it opened.
  CHECK(curve.listed(*a));
  curve.set_tenants({{.name = "voice", .key = docs.public_key}});
  CHECK_FALSE(curve.listed(*a));
  curve.set_tenants({{.name = "docs", .key = docs.public_key}});
  CHECK_FALSE(curve.listed(*a));

  authenticator dev(false);
  const auto d = ask(dev, zap_request("NULL"));
  REQUIRE(d);
  CHECK(d->key.empty());
  CHECK(dev.listed(*d));
  CHECK_FALSE(ask(dev, zap_request("CURVE", voice.public_key)));
}

TEST_CASE("a refused handshake is described by its address and the key it offered", "[serve]") {
  const auto listed = *client::generate_key_pair(), stranger = *client::generate_key_pair();
  authenticator curve(true);
  curve.set_tenants({{.name = "voice", .key = listed.public_key}});
  const auto describe = [](const authenticator& a, const std::vector<std::string>& request) {
    const std::vector<std::string_view> frames(request.begin(), request.end());
    return a.describe_refusal(frames);
  };
  CHECK_FALSE(ask(curve, zap_request("CURVE", stranger.public_key)));
  CHECK(describe(curve, zap_request("CURVE", stranger.public_key)) ==
        std::string("from 127.0.0.1: CURVE key ")
            .append(stranger.public_key)
            .append(" is listed for no tenant"));
  CHECK(describe(curve, zap_request("NULL")) ==
        "from 127.0.0.1: a NULL handshake (no CURVE key: the client lacks the server's key)");
  authenticator dev(false);
  CHECK(describe(dev, zap_request("CURVE", stranger.public_key)) ==
        "from 127.0.0.1: a CURVE handshake to a development-mode server (no keys)");
  CHECK(describe(dev, {"1.0"}) ==
        "from an unknown address: a malformed handshake to a development-mode server (no keys)");
}
