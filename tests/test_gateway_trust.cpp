// The gateway against a hostile household device or a careless operator: a reply reaches only
// the connection and tenant that sent the request, revoked keys stop working, refusals never
// look like another request's end. Raw DEALER sockets, so a test can do what our clients never
// would (pick a routing id, send a second message with an id in flight, stop reading).
#include <catch2/catch.hpp>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "gateway_fixture.hpp"

using namespace hearth;
using namespace hearth::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

// A DEALER speaking wire protocol v1 by hand.
class raw_peer {
 public:
  struct identity {
    std::string routing_id;                                  //!< "" = libzmq chooses
    std::string server_key;                                  //!< "" = no CURVE
    client::key_pair keys;
  };

  raw_peer(zmq::context_t& ctx, const std::string& endpoint, const identity& who)
      : s_(ctx, zmq::socket_type::dealer) {
    s_.set(zmq::sockopt::linger, 0);
    if (!who.routing_id.empty()) s_.set(zmq::sockopt::routing_id, who.routing_id);
    if (!who.server_key.empty()) {
      s_.set(zmq::sockopt::curve_serverkey, who.server_key);
      s_.set(zmq::sockopt::curve_publickey, who.keys.public_key);
      s_.set(zmq::sockopt::curve_secretkey, who.keys.secret_key);
    }
    s_.connect(endpoint);
  }

  void send(const json& body) {
    const std::string text = body.dump();
    const std::array<zmq::const_buffer, 2> frames = {zmq::str_buffer("hearth/1"), zmq::buffer(text)};
    REQUIRE(zmq::send_multipart(s_, frames, zmq::send_flags::dontwait));
  }

  //! The next message within `timeout`, heartbeats skipped.
  std::optional<json> receive(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      s_.set(zmq::sockopt::rcvtimeo, static_cast<int>(left.count()));
      std::vector<zmq::message_t> reply;
      if (!zmq::recv_multipart(s_, std::back_inserter(reply))) return std::nullopt;
      REQUIRE(reply.size() == 2);
      json j = json::parse(reply[1].to_string());
      if (j["type"] != "heartbeat") return j;
    }
  }

  //! Messages until the next one of `type` (which is returned last), within `timeout`.
  std::vector<json> receive_until(std::string_view type, std::chrono::milliseconds timeout) {
    std::vector<json> got;
    while (auto j = receive(timeout)) {
      got.push_back(*j);
      if ((*j)["type"] == type) break;
    }
    return got;
  }

  void close() { s_.close(); }

 private:
  zmq::socket_t s_;
};

json generate_json(const std::string& id, uint32_t max_tokens, bool stream) {
  return {{"type", "generate"}, {"id", id}, {"prompt", long_prompt()}, {"max_tokens", max_tokens},
          {"temperature", 0},   {"stream", stream}};
}

// Everything `peer` receives until the engine has nothing left to run (and 200 ms more).
std::vector<json> receive_until_idle(served& s, raw_peer& peer) {
  std::vector<json> got;
  auto quiet_since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - quiet_since < 200ms) {
    if (auto j = peer.receive(20ms)) got.push_back(*j);
    const auto g = *s.eng->gauges();
    if (g.running + g.waiting > 0 || g.kv.used > 0) quiet_since = std::chrono::steady_clock::now();
  }
  return got;
}

struct curve_household {
  client::key_pair server = *client::generate_key_pair();
  client::key_pair alice = *client::generate_key_pair(), bob = *client::generate_key_pair();
  std::vector<tenant_config> tenants() const {
    return {{.name = "alice", .key = alice.public_key}, {.name = "bob", .key = bob.public_key}};
  }
};

}  // namespace

TEST_CASE("a new connection with another's routing id inherits nothing of its requests", "[gateway][trust]") {
  const curve_household keys;
  const bool curve = GENERATE(true, false);
  const bool stream = GENERATE(true, false);
  const auto delay = GENERATE(0ms, 300ms, 1500ms);
  DYNAMIC_SECTION((curve ? "CURVE" : "development mode") << ", " << (stream ? "streaming" : "not streaming")
                                                         << ", B connects " << delay.count() << " ms after A left") {
    server::gateway_options opt;
    if (curve) opt = {.secret_key = keys.server.secret_key, .tenants = keys.tenants()};
    auto s = served::start(opt, {}, 5ms);
    zmq::context_t ctx;
    const std::string server_key = curve ? keys.server.public_key : "";
    raw_peer a(ctx, s.gw->endpoint(), {"house-0", server_key, keys.alice});
    json g = generate_json("g", 300, stream);
    if (!curve) g["tenant"] = "alice";
    a.send(g);
    const auto first = a.receive(5s);
    REQUIRE(first);
    REQUIRE((*first)["type"] == "accepted");
    if (stream) REQUIRE((*a.receive(5s))["type"] == "token");
    a.close();
    std::this_thread::sleep_for(delay);

    raw_peer b(ctx, s.gw->endpoint(), {"house-0", server_key, keys.bob});
    const auto got = receive_until_idle(s, b);
    INFO("B received: " << json(got).dump());
    CHECK(got.empty());
    CHECK(s.idle());
  }
}

TEST_CASE("a connection that waits with another's routing id gets nothing when that one leaves", "[gateway][trust]") {
  const curve_household keys;
  auto s = served::start({.secret_key = keys.server.secret_key, .tenants = keys.tenants()}, {}, 5ms);
  zmq::context_t ctx;
  raw_peer a(ctx, s.gw->endpoint(), {"house-0", keys.server.public_key, keys.alice});
  a.send(generate_json("g", 300, true));
  REQUIRE((*a.receive(5s))["type"] == "accepted");
  // B's routing id is taken while A is connected: libzmq sets B aside, and A's leaving must not
  // hand B A's stream.
  raw_peer b(ctx, s.gw->endpoint(), {"house-0", keys.server.public_key, keys.bob});
  b.send({{"type", "ping"}, {"id", "p"}});
  std::this_thread::sleep_for(200ms);
  a.close();
  const auto got = receive_until_idle(s, b);
  INFO("B received: " << json(got).dump());
  for (const auto& j : got) CHECK(j["type"] == "pong");  // its own, if anything
  CHECK(s.idle());
}
