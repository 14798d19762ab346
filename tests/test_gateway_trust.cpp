// The gateway against a hostile household device or a careless operator: a reply reaches only
// the connection and tenant that sent the request, revoked keys stop working, refusals never
// look like another request's end. Raw DEALER sockets, so a test can do what our clients never
// would (pick a routing id, send a second message with an id in flight, stop reading).
#include <catch2/catch.hpp>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "gateway_fixture.hpp"
#include "server/protocol.hpp"

using namespace hearth;
using namespace hearth::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

// A DEALER speaking wire protocol v1 by hand.
class raw_peer {
 public:
  struct identity {
    std::string routing_id;  //!< "" = libzmq chooses
    std::string server_key;  //!< "" = no CURVE
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
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
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
  return {{"type", "generate"},       {"id", id},         {"prompt", long_prompt()},
          {"max_tokens", max_tokens}, {"temperature", 0}, {"stream", stream}};
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

TEST_CASE("a connection that leaves with requests in flight: the next one gets nothing of them",
          "[gateway][trust]") {
  const curve_household keys;
  const bool curve = GENERATE(true, false);
  const bool stream = GENERATE(true, false);
  const auto delay = GENERATE(0ms, 300ms, 1500ms);
  DYNAMIC_SECTION((curve ? "CURVE" : "development mode")
                  << ", " << (stream ? "streaming" : "not streaming") << ", B connects " << delay.count()
                  << " ms after A left") {
    server::gateway_options opt;
    if (curve) opt = {.secret_key = keys.server.secret_key, .tenants = keys.tenants()};
    auto s = served::start(opt, {}, 5ms);
    zmq::context_t ctx;
    const std::string server_key = curve ? keys.server.public_key : "";
    raw_peer a(ctx, s.gw->endpoint(), {"", server_key, keys.alice});
    json g = generate_json("g", 300, stream);
    if (!curve) g["tenant"] = "alice";
    a.send(g);
    const auto first = a.receive(5s);
    REQUIRE(first);
    REQUIRE((*first)["type"] == "accepted");
    if (stream) REQUIRE((*a.receive(5s))["type"] == "token");
    a.close();
    std::this_thread::sleep_for(delay);

    raw_peer b(ctx, s.gw->endpoint(), {"", server_key, keys.bob});
    const auto got = receive_until_idle(s, b);
    INFO("B received: " << json(got).dump());
    CHECK(got.empty());
    CHECK(s.idle());
  }
}

TEST_CASE("a connection that sets its own routing id is refused, and one that takes it over gets nothing",
          "[gateway][trust]") {
  const curve_household keys;
  const bool curve = GENERATE(true, false);
  CAPTURE(curve);
  server::gateway_options opt;
  if (curve) opt = {.secret_key = keys.server.secret_key, .tenants = keys.tenants()};
  auto s = served::start(opt, {}, 5ms);
  zmq::context_t ctx;
  const std::string server_key = curve ? keys.server.public_key : "";
  raw_peer a(ctx, s.gw->endpoint(), {"house-0", server_key, keys.alice});
  json g = generate_json("g", 300, true);
  if (!curve) g["tenant"] = "alice";
  a.send(g);
  a.send({{"type", "ping"}, {"id", "p"}});
  for (const std::string id : {"g", "p"}) {
    const auto refused = a.receive(5s);
    REQUIRE(refused);
    CHECK((*refused)["type"] == "error");
    CHECK((*refused)["id"] == id);
    CHECK((*refused)["code"] == "bad_request");
    CHECK((*refused)["message"].get<std::string>().find("ZMQ_ROUTING_ID") != std::string::npos);
  }
  CHECK(s.idle());
  a.close();
  // The id is free once A has gone: B may take it, and is refused alike. Until the gateway's
  // socket has taken in A's end, libzmq ignores a connection that brings the id A's pipe still
  // holds (no ZMQ_ROUTER_HANDOVER, rightly: a newcomer must not take a live peer's replies), so
  // B connects again while it hears nothing.
  std::vector<json> got;
  for (int attempt = 0; attempt < 10 && got.empty(); ++attempt) {
    raw_peer b(ctx, s.gw->endpoint(), {"house-0", server_key, keys.bob});
    b.send({{"type", "ping"}, {"id", "q"}});
    got = b.receive_until("error", 1s);
  }
  INFO("B received: " << json(got).dump());
  REQUIRE(got.size() == 1);
  CHECK(got[0]["id"] == "q");
  CHECK(s.idle());
}

TEST_CASE("a revoked key's open connection loses its requests and is refused every message",
          "[gateway][trust]") {
  const curve_household keys;
  std::vector<tenant_config> tenants = keys.tenants();
  const auto quota = static_cast<uint32_t>(raw_prompt(long_prompt()).size());  // its stream fits, no more
  tenants[0].quota.max_prompt_tokens = quota;
  engine_config cfg;
  cfg.tenants = tenants;
  auto s = served::start({.secret_key = keys.server.secret_key, .tenants = tenants}, cfg, 5ms);
  zmq::context_t ctx;
  raw_peer alice(ctx, s.gw->endpoint(), {"", keys.server.public_key, keys.alice});
  raw_peer bob(ctx, s.gw->endpoint(), {"", keys.server.public_key, keys.bob});
  alice.send(generate_json("g", 300, true));
  REQUIRE((*alice.receive(5s))["type"] == "accepted");
  std::vector<tenant_config> after;
  SECTION("removed from the file") {
    after = {tenants[1]};
  }
  SECTION("given another key") {
    after = tenants;
    after[0].key = client::generate_key_pair()->public_key;
  }
  REQUIRE(s.eng->set_tenants(after).ok());
  s.gw->reconfigure({after, "fcfs"});
  const auto ended = alice.receive_until("error", 5s);
  REQUIRE_FALSE(ended.empty());
  CHECK(ended.back()["id"] == "g");
  CHECK(ended.back()["code"] == "unauthorized");
  // Every message from then on, and no escape from the quota by being unknown: a prompt over
  // max_prompt_tokens would once have been served with no quota at all.
  alice.send({{"type", "ping"}, {"id", "p"}});
  const auto pong = alice.receive(5s);
  REQUIRE(pong);
  CHECK((*pong)["type"] == "error");
  CHECK((*pong)["code"] == "unauthorized");
  json big = generate_json("h", 4, true);
  big["prompt"] = long_prompt() + " " + long_prompt() + " " + long_prompt();
  REQUIRE(raw_prompt(big["prompt"]).size() > quota);
  alice.send(big);
  const auto refused = alice.receive(5s);
  REQUIRE(refused);
  CHECK((*refused)["code"] == "unauthorized");
  bob.send({{"type", "ping"}, {"id", "p"}});
  CHECK((*bob.receive(5s))["tenant"] == "bob");
  CHECK(s.idle());
}

TEST_CASE("a refusal that names a request in flight is `refused`, and the request goes on",
          "[gateway][trust]") {
  auto s = served::start({}, {}, 2ms);
  zmq::context_t ctx;
  raw_peer c(ctx, s.gw->endpoint(), {});
  c.send(generate_json("t1", 60, true));
  REQUIRE((*c.receive(5s))["type"] == "accepted");
  c.send({{"type", "cancel"}, {"id", "t1"}, {"extra", 1}});
  c.send(generate_json("t1", 5, true));
  c.send({{"type", "ping"}, {"id", "t1"}, {"nonsense", true}});
  const auto got = c.receive_until("done", 10s);
  std::vector<json> refusals;
  size_t tokens = 0;
  for (const auto& j : got) {
    CHECK(j["type"] != "error");  // nothing that reads as t1's end before its done
    if (j["type"] == "refused") refusals.push_back(j);
    if (j["type"] == "token") ++tokens;
  }
  REQUIRE(refusals.size() == 3);
  for (const auto& r : refusals) {
    CHECK(r["id"] == "t1");
    CHECK(r["code"] == "bad_request");
  }
  REQUIRE(got.back()["type"] == "done");
  CHECK(tokens == 60);
  // With nothing in flight under that id, the refusal is its message's one answer: an error.
  c.send({{"type", "ping"}, {"id", "t1"}, {"nonsense", true}});
  const auto after = c.receive(5s);
  REQUIRE(after);
  CHECK((*after)["type"] == "error");
  CHECK((*after)["id"] == "t1");
}

TEST_CASE("a client that stops reading is cancelled once its queue is full and its heartbeats lapse",
          "[gateway][trust]") {
  // 400 tokens at 30 ms a step would take 12 s; the reader stops at once, with a queue of 10
  // messages and a 4 KiB socket buffer: libzmq then reads nothing more from the connection, the
  // server's ZMTP heartbeats go unanswered, and 5 s later (their timeout) the server drops it.
  auto s = served::start({}, {}, 30ms);
  zmq::context_t ctx;
  zmq::socket_t idle(ctx, zmq::socket_type::dealer);
  idle.set(zmq::sockopt::rcvhwm, 10);
  idle.set(zmq::sockopt::rcvbuf, 4096);
  idle.set(zmq::sockopt::linger, 0);
  idle.connect(s.gw->endpoint());
  const std::string text = generate_json("g", 400, true).dump();
  const std::array<zmq::const_buffer, 2> frames = {zmq::str_buffer("hearth/1"), zmq::buffer(text)};
  REQUIRE(zmq::send_multipart(idle, frames));
  const auto started = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(500ms);
  REQUIRE(s.idle());  // waits up to 10 s for the engine to run nothing
  const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto m = *s.eng->metrics(std::string("default"));
  REQUIRE(m.tenants.size() == 1);
  CHECK(m.tenants[0].cancelled == 1);
  CHECK(m.tenants[0].done == 0);
  CHECK(waited_s < 11.0);
}

TEST_CASE("a client that connects while the server stops is told shutting_down", "[gateway][trust]") {
  auto s = served::start({}, {}, 5ms);
  zmq::context_t ctx;
  raw_peer early(ctx, s.gw->endpoint(), {});
  early.send(generate_json("g", 100, true));
  REQUIRE((*early.receive(5s))["type"] == "accepted");
  s.gw->drain();
  s.eng->shutdown();
  s.gw->stop(5s);  // the engine may be destroyed from here; the socket still answers
  const auto ended = early.receive_until("error", 5s);
  REQUIRE_FALSE(ended.empty());
  CHECK(ended.back()["code"] == "shutting_down");
  raw_peer late(ctx, s.gw->endpoint(), {});
  late.send({{"type", "ping"}, {"id", "p"}});
  late.send(generate_json("h", 4, true));
  for (const std::string id : {"p", "h"}) {
    const auto j = late.receive(5s);
    REQUIRE(j);
    CHECK((*j)["id"] == id);
    CHECK((*j)["type"] == "error");
    CHECK((*j)["code"] == "shutting_down");
  }
}

TEST_CASE("when the engine fails, every request in flight ends with internal, and so does every later one",
          "[gateway][trust]") {
  const bool hangs = GENERATE(false, true);
  INFO((hangs ? "step 20 never returns" : "step 20 throws"));
  auto hang = hangs ? std::make_shared<gate>() : nullptr;
  auto s = served::start({}, {.step_timeout_ms = 300}, {.delay = 5ms, .fault_at = 20, .hang = hang});
  const open_at_exit opener{hang};
  zmq::context_t ctx;
  raw_peer c(ctx, s.gw->endpoint(), {});
  for (const std::string id : {"a", "b", "c"}) c.send(generate_json(id, 200, true));
  std::map<std::string, std::string> codes;
  while (codes.size() < 3) {
    const auto j = c.receive(10s);
    REQUIRE(j);
    if ((*j)["type"] == "error") codes[(*j)["id"]] = (*j)["code"];
    CHECK((*j)["type"] != "done");
  }
  for (const auto& [id, code] : codes) CHECK(code == "internal");
  c.send(generate_json("d", 4, true));
  const auto later = c.receive(5s);
  REQUIRE(later);
  CHECK((*later)["code"] == "internal");
  CHECK_THAT((*later)["message"].get<std::string>(),
             Catch::Matchers::Contains(hangs ? "step 20 has not returned in 300 ms" : "step 20 fails"));
  c.send({{"type", "ping"}, {"id", "p"}});
  CHECK((*c.receive(5s))["type"] == "pong");  // the gateway itself still answers
}

TEST_CASE("a long prompt is tokenized without holding up another client's reply", "[gateway][trust]") {
  // A prompt whose tokenizing takes about a second here, measured in this run.
  const tokenizer& tok = *micro().tok;
  std::string words;
  while (words.size() < (256 << 10)) words += "turn the kitchen lights off and the heating down ";
  const auto t0 = std::chrono::steady_clock::now();
  (void)tok.encode(words, {.add_bos = true, .parse_special = false});
  const double piece_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const size_t pieces = std::clamp<size_t>(static_cast<size_t>(1000.0 / std::max(piece_ms, 1.0)), 1, 24);
  std::string prompt;
  for (size_t i = 0; i < pieces; ++i) prompt += words;
  const double tokenize_ms = piece_ms * static_cast<double>(pieces);
  INFO("prompt of " << prompt.size() << " bytes, about " << tokenize_ms << " ms to tokenize");

  // The gateway thread still reads the message itself (its JSON, its UTF-8): that much a ping
  // beside it may wait, measured here too (a few ms a MiB in Release, far more under ASan).
  json g = generate_json("g", 4, true);
  g["prompt"] = prompt;
  const std::string text = g.dump();
  const auto p0 = std::chrono::steady_clock::now();
  const std::array<std::string_view, 2> frames = {wire::marker, text};
  REQUIRE(wire::parse_message(frames, {static_cast<uint32_t>(tok.n_vocab())}));
  const double parse_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p0).count();
  INFO("about " << parse_ms << " ms to parse");

  auto s = served::start({.max_message_bytes = prompt.size() + 4096});
  zmq::context_t ctx;
  raw_peer big(ctx, s.gw->endpoint(), {}), small(ctx, s.gw->endpoint(), {});
  small.send({{"type", "ping"}, {"id", "warm"}});
  REQUIRE(small.receive(5s));
  big.send(g);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(tokenize_ms / 10) + 20));
  double worst_ms = 0;
  for (int i = 0; i < 5; ++i) {
    const auto sent = std::chrono::steady_clock::now();
    small.send({{"type", "ping"}, {"id", "p" + std::to_string(i)}});
    REQUIRE(small.receive(10s));
    worst_ms = std::max(
        worst_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count());
  }
  INFO("slowest ping " << worst_ms << " ms");
  CHECK(worst_ms < 2 * parse_ms + tokenize_ms / 4);
  const auto answer = big.receive(30s);  // too long for the context: refused once tokenized
  REQUIRE(answer);
  CHECK((*answer)["code"] == "too_long");
}
