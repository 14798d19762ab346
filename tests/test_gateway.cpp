// The gateway over real loopback sockets, driven by the C++ client: the same tokens as an
// in-process generation, many clients at once, cancel, a killed client, malformed input next to
// a healthy stream, CURVE authentication and tenant isolation, shutdown.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "bench/household/zmq_target.hpp"
#include "child_process.hpp"
#include "gateway_fixture.hpp"
#include "protocol_corpus.hpp"

using namespace hearth;
using namespace hearth::test;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

client::generate_params greedy(std::string prompt, uint32_t max_tokens) {
  return {.prompt = std::move(prompt), .max_tokens = max_tokens, .temperature = 0, .idle_timeout = 20s};
}

std::unique_ptr<client::client> connect(const client::options& o) {
  auto c = client::client::connect(o);
  if (!c) FAIL(c.error().code << ": " << c.error().message);
  return std::move(*c);
}

}  // namespace

TEST_CASE("the client streams the tokens of an in-process generation", "[gateway]") {
  auto s = served::start();
  auto c = connect(s.options());
  for (const std::string prompt : {"Lights off in the kitchen?", "a", "Tell me a story about a hearth."}) {
    INFO(prompt);
    const auto expected = oracle(raw_prompt(prompt), 24);
    std::vector<int32_t> streamed;
    std::string text;
    auto done = c->generate(greedy(prompt, 24), [&](const client::token& t) {
      CHECK(t.index == streamed.size());
      streamed.push_back(t.id);
      text += t.text;
      return true;
    });
    REQUIRE(done.ok());
    CHECK(streamed == expected);
    CHECK(done->tokens == expected);
    CHECK(done->text == text);
    CHECK(done->prompt_tokens == raw_prompt(prompt).size());
    CHECK(done->completion_tokens == expected.size());  // what was streamed: never the end token
    CHECK(done->finish_reason == (expected.size() == 24 ? "length" : "eos"));
    // Not streamed: the same text in `done`.
    auto whole = c->generate({.prompt = prompt, .max_tokens = 24, .temperature = 0, .stream = false});
    REQUIRE(whole.ok());
    CHECK(whole->tokens.empty());
    CHECK(whole->text == text);
  }
  // Chat turns go through the model's template, as `hearth generate --chat` formats them.
  const std::vector<chat_message> turns = {{"system", "You are terse."}, {"user", "Kitchen lights?"}};
  auto chat = c->generate({.messages = {{"system", "You are terse."}, {"user", "Kitchen lights?"}},
                           .max_tokens = 16,
                           .temperature = 0});
  REQUIRE(chat.ok());
  CHECK(chat->tokens == oracle(*encode_chat(*micro().tok, turns), 16));
  const auto pong = c->ping();
  REQUIRE(pong.ok());
  CHECK((*pong)["protocol"] == 1);
  CHECK((*pong)["revision"] == 4);
  CHECK((*pong)["tenant"].is_null());
  const auto models = c->models();
  REQUIRE(models.ok());
  CHECK((*models)["models"][0]["n_vocab"] == 600);
  CHECK(s.idle());
}

TEST_CASE("8 clients stream at once, each getting its own tokens", "[gateway]") {
  auto s = served::start();
  std::vector<std::string> prompts;
  std::vector<std::vector<int32_t>> expected;
  for (int i = 0; i < 8; ++i) {
    prompts.push_back("client " + std::to_string(i) + " asks about the weather");
    expected.push_back(oracle(raw_prompt(prompts.back()), 20));
  }
  std::vector<std::future<std::vector<int32_t>>> results;
  for (int i = 0; i < 8; ++i)
    results.push_back(std::async(std::launch::async, [&, i] {
      auto c = client::client::connect(s.options("tenant" + std::to_string(i % 3)));
      if (!c) return std::vector<int32_t>{-1};
      auto done = (*c)->generate(greedy(prompts[i], 20));
      return done ? done->tokens : std::vector<int32_t>{-2};
    }));
  for (int i = 0; i < 8; ++i) CHECK(results[i].get() == expected[i]);
  CHECK(s.idle());
}

TEST_CASE("one thread reads many streams at once through wait() and ready()", "[gateway]") {
  auto s = served::start({}, {.max_seqs = 8});
  auto c = connect(s.options());
  std::vector<client::stream> streams;
  std::vector<std::vector<int32_t>> got(4), expected;
  for (int i = 0; i < 4; ++i) {
    const std::string prompt = "stream " + std::to_string(i) + " of one thread";
    expected.push_back(oracle(raw_prompt(prompt), 16));
    auto st = c->start(greedy(prompt, 16));
    REQUIRE(st.ok());
    streams.push_back(std::move(*st));
  }
  auto refused = c->start({.prompt = "x", .temperature = -1});  // bad_request, before any `accepted`
  REQUIRE(refused.ok());
  const auto all_ended = [&] {
    return refused->ended() &&
           std::all_of(streams.begin(), streams.end(), [](const auto& x) { return x.ended(); });
  };
  for (int rounds = 0; !all_ended() && rounds < 2000; ++rounds) {
    c->wait(10ms);
    for (size_t i = 0; i < streams.size(); ++i)
      while (!streams[i].ended() && streams[i].ready())
        if (auto t = streams[i].next()) got[i].push_back(t->id);
    if (!refused->ended() && refused->ready()) CHECK_FALSE(refused->next());
  }
  REQUIRE(all_ended());
  for (size_t i = 0; i < streams.size(); ++i) {
    CHECK(got[i] == expected[i]);
    REQUIRE(streams[i].result().ok());
    CHECK(streams[i].accepted());
    const client::completion& d = streams[i].result().value();
    CHECK(d.first_step_ms > 0);
    CHECK(d.queue_ms + d.prefill_ms + d.first_step_ms <= d.ttft_ms + 1);
  }
  CHECK_FALSE(refused->accepted());
  CHECK(refused->result().error().code == "bad_request");
  // stats: what the iterations ran, beside the configured limits.
  const auto stats = c->stats();
  REQUIRE(stats.ok());
  const auto& engine = (*stats)["engine"];
  CHECK(engine["per_step"]["seqs"]["count"].get<uint64_t>() > 0);
  CHECK(engine["per_step"]["seqs"]["max"].get<double>() <= 8);
  CHECK(engine["per_step"]["decode_tokens"]["count"] == engine["per_step"]["seqs"]["count"]);
  CHECK(engine["limits"]["max_seqs"] == 8);
  CHECK(engine["limits"]["mode"] == "colocated");
  CHECK(s.idle());
}

TEST_CASE("the bench's ZeroMQ target streams every request and maps refusals to their reason", "[gateway]") {
  struct sink final : household::bench_sink {
    std::mutex mu;
    std::condition_variable cv;
    std::map<size_t, size_t> tokens;
    std::map<size_t, household::bench_outcome> ends;
    void on_token(size_t i) override {
      std::lock_guard lock(mu);
      ++tokens[i];
    }
    void on_end(size_t i, const household::bench_outcome& o) override {
      std::lock_guard lock(mu);
      ends[i] = o;
      cv.notify_all();
    }
  };
  auto s = served::start({}, {.max_seqs = 8});
  auto t = household::zmq_target::connect(s.options(""));
  REQUIRE(t.ok());
  auto events = std::make_shared<sink>();
  const std::vector<std::string> tenants = {"chat", "rag", "background"};
  for (size_t i = 0; i < 3; ++i)
    (*t)->submit(
        {.index = i, .tenant = tenants[i], .prompt = "request " + std::to_string(i), .max_tokens = 12},
        events);
  (*t)->submit({.index = 3, .tenant = "chat", .prompt = "too long", .max_tokens = 600},
               events);  // > n_ctx 512
  {
    std::unique_lock lock(events->mu);
    REQUIRE(events->cv.wait_for(lock, 20s, [&] { return events->ends.size() == 4; }));
  }
  for (size_t i = 0; i < 3; ++i) {
    const household::bench_outcome& o = events->ends[i];
    CHECK(o.kind == event_kind::done);
    CHECK(o.use.completion_tokens == events->tokens[i]);
    CHECK(events->tokens[i] == oracle(raw_prompt("request " + std::to_string(i)), 12).size());
    CHECK(o.time.first_step_ms > 0);
  }
  CHECK(events->ends[3].kind == event_kind::rejected);
  CHECK(events->ends[3].reason == reject_reason::too_long);
  const household::target_gauges g = (*t)->gauges();
  CHECK(g.kv_total > 0);
  const household::server_figures f = (*t)->figures();
  CHECK(f.has_steps);
  CHECK(f.seqs.count == f.steps);
  CHECK(f.max_seqs == 8);
  // Each request went as its class's tenant (development mode).
  for (const auto& name : tenants) {
    auto c = connect(s.options(name));
    CHECK((*c->stats())["tenant"]["done"] == 1);
  }
  CHECK(s.idle());
}

TEST_CASE("a cancel mid-stream ends the stream with `cancelled` and frees its blocks", "[gateway]") {
  auto s = served::start({}, {}, 5ms);
  auto c = connect(s.options());
  const std::string prompt = long_prompt();
  auto st = c->start(greedy(prompt, 200));
  REQUIRE(st.ok());
  int n = 0;
  while (auto t = st->next())
    if (++n == 3) st->cancel();
  REQUIRE_FALSE(st->result().ok());
  CHECK(st->result().error().code == "cancelled");
  CHECK(n < 200);
  CHECK(s.idle());
  // Cancelling an unknown or finished id does nothing, and the connection keeps working.
  REQUIRE(c->cancel(st->id()).ok());
  REQUIRE(c->cancel("nobody").ok());
  CHECK(c->ping().ok());
}

TEST_CASE("a client killed mid-stream has its requests cancelled and their blocks freed", "[gateway]") {
  // One sequence at a time: of the child's 3 requests one streams, two wait in the queue.
  auto s = served::start({}, {.max_batched_tokens = 64, .max_seqs = 1}, 10ms);
  const std::string prompt = long_prompt();
  const piped_child client =
      spawn_piped("./gateway_test_client", {"gateway_test_client", s.gw->endpoint(), "3", "300", prompt});
  const pid_t child = client.pid;
  char line[32] = {};
  const ssize_t got = ::read(client.out, line, sizeof line - 1);
  ::close(client.out);
  REQUIRE(std::string(line, got > 0 ? got : 0) == "streaming\n");
  const auto before = *s.eng->gauges();
  CHECK(before.running == 1);
  CHECK(before.waiting == 2);
  CHECK(before.kv.used > 0);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(s.idle());  // within seconds; the three streams alone would run ~9 s
  const auto m = *s.eng->metrics();
  uint64_t cancelled = 0, done = 0;
  for (const auto& t : m.tenants) cancelled += t.cancelled, done += t.done;
  CHECK(cancelled == 3);
  CHECK(done == 0);
}

TEST_CASE("in the queue only the first-token timeout runs, and the idle timeout starts at the first token",
          "[gateway]") {
  // One sequence at a time: the second and third requests wait ~1 s behind the first, hearing
  // only the server's heartbeats (every 100 ms), each on its own connection.
  auto s = served::start({}, {.max_batched_tokens = 64, .max_seqs = 1}, 10ms);
  auto c = connect(s.options());
  auto first = c->start(greedy(long_prompt(), 100));
  REQUIRE(first.ok());
  REQUIRE(first->next());
  auto idle_only = greedy(long_prompt(), 5);
  idle_only.idle_timeout = 400ms;
  auto patient = connect(s.options());
  auto second = patient->start(idle_only);
  REQUIRE(second.ok());
  auto first_token_only = greedy(long_prompt(), 5);
  first_token_only.first_token_timeout = 300ms;
  auto hasty = connect(s.options());
  auto third = hasty->start(first_token_only);
  REQUIRE(third.ok());
  CHECK_FALSE(third->next());
  CHECK(third->result().error().code == "timeout");
  CHECK_THAT(third->result().error().message, Contains("first-token timeout"));
  int n = 0;
  while (second->next()) ++n;
  REQUIRE(second->result().ok());
  CHECK(n == 5);
  CHECK(second->result()->client_ttft_ms > 400);  // it waited longer than its idle timeout
  while (first->next()) {
  }
  CHECK(first->result().ok());
}

TEST_CASE("malformed messages get bad_request while a stream next to them completes", "[gateway]") {
  auto s = served::start({}, {}, 2ms);
  const std::string prompt = long_prompt();
  const auto expected = oracle(raw_prompt(prompt), 64);
  auto healthy = std::async(std::launch::async, [&] {
    auto c = client::client::connect(s.options());
    if (!c) return std::vector<int32_t>{-1};
    auto done = (*c)->generate(greedy(prompt, 64));
    return done ? done->tokens : std::vector<int32_t>{-2};
  });
  zmq::context_t ctx;
  zmq::socket_t raw(ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.set(zmq::sockopt::rcvtimeo, 5000);
  raw.connect(s.gw->endpoint());
  for (const auto& bad : malformed_corpus()) {
    INFO("frame 1: " << (bad.frames.size() > 1 ? bad.frames[1].substr(0, 100) : std::string("(none)")));
    std::vector<zmq::const_buffer> frames;
    for (const auto& f : bad.frames) frames.push_back(zmq::buffer(f));
    REQUIRE(zmq::send_multipart(raw, frames));
    std::vector<zmq::message_t> reply;
    REQUIRE(zmq::recv_multipart(raw, std::back_inserter(reply)));
    REQUIRE(reply.size() == 2);
    CHECK(reply[0].to_string() == "hearth/1");
    const auto j = nlohmann::json::parse(reply[1].to_string());
    CHECK(j["type"] == "error");
    CHECK(j["code"] == "bad_request");
    CHECK_THAT(j["message"].get<std::string>(), Contains(bad.names));
    CHECK(j["id"] == (bad.id ? nlohmann::json(*bad.id) : nlohmann::json(nullptr)));
  }
  CHECK(healthy.get() == expected);
  CHECK(s.idle());
}

TEST_CASE("a message over max_message_bytes closes only its own connection", "[gateway]") {
  auto s = served::start({.max_message_bytes = 4096});
  auto c = connect(s.options());
  zmq::context_t ctx;
  zmq::socket_t raw(ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::rcvtimeo, 500);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(s.gw->endpoint());
  const std::string big = R"({"type":"generate","id":"big","prompt":")" + std::string(8192, 'x') + R"("})";
  const std::array<zmq::const_buffer, 2> frames = {zmq::str_buffer("hearth/1"), zmq::buffer(big)};
  REQUIRE(zmq::send_multipart(raw, frames));
  std::vector<zmq::message_t> reply;
  CHECK_FALSE(zmq::recv_multipart(raw, std::back_inserter(reply)));  // dropped: no answer at all
  auto done = c->generate(greedy("still here?", 8));
  REQUIRE(done.ok());
  CHECK(done->tokens == oracle(raw_prompt("still here?"), 8));
  CHECK(s.idle());
}

TEST_CASE("an id in flight cannot be reused", "[gateway]") {
  auto s = served::start({}, {}, 5ms);
  zmq::context_t ctx;
  zmq::socket_t raw(ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::rcvtimeo, 5000);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(s.gw->endpoint());
  auto send = [&](const std::string& body) {
    const std::array<zmq::const_buffer, 2> f = {zmq::str_buffer("hearth/1"), zmq::buffer(body)};
    REQUIRE(zmq::send_multipart(raw, f));
  };
  auto receive = [&] {
    std::vector<zmq::message_t> reply;
    REQUIRE(zmq::recv_multipart(raw, std::back_inserter(reply)));
    return nlohmann::json::parse(reply.at(1).to_string());
  };
  const std::string gen =
      R"({"type":"generate","id":"x","prompt":")" + long_prompt() + R"(","max_tokens":100})";
  send(gen);
  CHECK(receive()["type"] == "accepted");
  send(gen);
  nlohmann::json j;
  do j = receive();
  while (j["type"] == "token" || j["type"] == "heartbeat");
  CHECK(j["code"] == "bad_request");
  CHECK_THAT(j["message"].get<std::string>(), Contains("'id'"));
  send(R"({"type":"cancel","id":"x"})");
  do j = receive();
  while (j["type"] != "error");
  CHECK(j["code"] == "cancelled");
  CHECK(s.idle());
}

TEST_CASE("development mode binds loopback and ipc only", "[gateway]") {
  CHECK(server::is_local_endpoint("tcp://127.0.0.1:5555"));
  CHECK(server::is_local_endpoint("tcp://127.0.0.2:*"));
  CHECK(server::is_local_endpoint("tcp://localhost:5555"));
  CHECK(server::is_local_endpoint("tcp://[::1]:5555"));
  CHECK(server::is_local_endpoint("tcp://lo:5555"));
  CHECK(server::is_local_endpoint("ipc:///run/hearth.sock"));
  CHECK_FALSE(server::is_local_endpoint("tcp://*:5555"));
  CHECK_FALSE(server::is_local_endpoint("tcp://0.0.0.0:5555"));
  CHECK_FALSE(server::is_local_endpoint("tcp://192.168.1.2:5555"));
  CHECK_FALSE(server::is_local_endpoint("tcp://127.0.0.1.evil.example:5555"));
  CHECK_FALSE(server::is_local_endpoint("tcp://eth0:5555"));
  CHECK_FALSE(server::is_local_endpoint("ipc://"));
  CHECK_FALSE(server::is_local_endpoint("udp://127.0.0.1:5555"));
  auto s = served::start();
  auto refused = server::gateway::start(*s.eng, {.endpoint = "tcp://0.0.0.0:*"});
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Contains("development mode"));
  auto bad_key =
      server::gateway::start(*s.eng, {.endpoint = "tcp://127.0.0.1:*", .secret_key = std::string(45, 'a')});
  REQUIRE_FALSE(bad_key.ok());
  CHECK_THAT(bad_key.error().message, Contains("secret key"));
}

TEST_CASE("shutdown ends every request in flight with shutting_down", "[gateway]") {
  auto s = served::start({}, {}, 5ms);
  auto c = connect(s.options());
  auto st = c->start(greedy(long_prompt(), 200));
  REQUIRE(st.ok());
  REQUIRE(st->next());  // streaming
  s.gw->drain();
  auto late = c->generate(greedy("too late", 4));
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().code == "shutting_down");
  s.eng->shutdown();
  std::thread stopper([&] { s.gw->stop(5s); });
  while (st->next()) {
  }
  stopper.join();
  REQUIRE_FALSE(st->result().ok());
  CHECK(st->result().error().code == "shutting_down");
}

TEST_CASE("CURVE: listed keys are accepted as their tenant, others refused, tenants stay apart",
          "[gateway]") {
  const auto server_keys = *client::generate_key_pair();
  const auto alice_keys = *client::generate_key_pair(), bob_keys = *client::generate_key_pair();
  const auto stranger = *client::generate_key_pair();
  const std::vector<tenant_config> tenants = {{.name = "alice", .key = alice_keys.public_key},
                                              {.name = "bob", .key = bob_keys.public_key, .admin = true}};
  auto s = served::start({.secret_key = server_keys.secret_key, .tenants = tenants}, {}, 5ms);
  CHECK(s.gw->public_key() == server_keys.public_key);
  auto opts = [&](const client::key_pair& k) {
    return client::options{.endpoint = s.gw->endpoint(),
                           .server_key = server_keys.public_key,
                           .keys = k,
                           .connect_timeout = 1500ms};
  };
  auto alice = connect(opts(alice_keys));
  auto bob = connect(opts(bob_keys));
  CHECK((*alice->ping())["tenant"] == "alice");
  CHECK((*bob->ping())["tenant"] == "bob");

  SECTION("an unknown key, a wrong server key, or no CURVE at all is refused at connect, saying which") {
    auto unknown = client::client::connect(opts(stranger));
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().code == "unauthorized");
    CHECK_THAT(unknown.error().message, Catch::Matchers::Contains(stranger.public_key));
    auto wrong_server = opts(alice_keys);
    wrong_server.server_key = stranger.public_key;
    CHECK(client::client::connect(wrong_server).error().code == "handshake");
    CHECK(client::client::connect({.endpoint = s.gw->endpoint(), .connect_timeout = 1500ms}).error().code ==
          "handshake");
  }
  SECTION("a tenant cannot cancel another's request, nor speak as another") {
    const std::string prompt = long_prompt();
    auto st = bob->start(greedy(prompt, 60));
    REQUIRE(st.ok());
    REQUIRE(st->next());
    REQUIRE(alice->cancel(st->id()).ok());
    REQUIRE(alice->ping().ok());  // the cancel has been read by now
    int n = 1;
    while (st->next()) ++n;
    REQUIRE(st->result().ok());
    CHECK(n == 60);
    auto posing = opts(alice_keys);
    posing.tenant = "bob";
    auto as_bob = connect(posing);
    auto r = as_bob->generate(greedy("hello", 4));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == "unauthorized");
  }
  SECTION("only admin tenants may switch the policy; stats show one's own counters") {
    auto denied = alice->admin("set_policy", "vtc");
    REQUIRE_FALSE(denied.ok());
    CHECK(denied.error().code == "unauthorized");
    auto ok = bob->admin("set_policy", "vtc");
    REQUIRE(ok.ok());
    CHECK((*ok)["policy"] == "vtc");
    auto unknown = bob->admin("set_policy", "nonsense");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().code == "bad_request");
    REQUIRE(bob->generate(greedy("hello", 4)).ok());
    const auto stats = alice->stats();
    REQUIRE(stats.ok());
    CHECK((*stats)["tenant"]["name"] == "alice");
    CHECK((*stats)["tenant"]["done"] == 0);
    CHECK((*stats)["engine"]["policy"] == "vtc");
    const auto& workers = (*stats)["engine"]["workers"];
    REQUIRE(workers.size() == 1);  // the engine's own worker, in this process
    CHECK(workers[0]["name"] == "worker");
    CHECK(workers[0]["device"] == "cpu");
    CHECK(workers[0]["lost"] == false);
    CHECK(workers[0]["steps"].get<uint64_t>() >= 4);
    CHECK(workers[0]["kv_blocks_total"] == (*stats)["engine"]["kv_blocks_total"]);
    CHECK(workers[0]["step_ms"].get<double>() > 0);
    CHECK((*bob->stats())["tenant"]["done"] == 1);
    CHECK_FALSE(stats->contains("tenants"));
  }
  SECTION("an admin's stats with `all` lists every tenant, with its requests waiting and running") {
    auto denied = alice->stats(true);
    REQUIRE_FALSE(denied.ok());
    CHECK(denied.error().code == "unauthorized");
    CHECK_THAT(denied.error().message, Catch::Matchers::Contains("'alice' is not an admin"));
    REQUIRE(alice->generate(greedy("hello", 4)).ok());
    auto running = alice->start(greedy(long_prompt(), 60));
    REQUIRE(running.ok());
    REQUIRE(running->next());  // streaming: it runs now
    const auto all = bob->stats(true);
    REQUIRE(all.ok());
    const auto& list = (*all)["tenants"];
    REQUIRE(list.size() == 1);  // bob has sent nothing
    CHECK(list[0]["name"] == "alice");
    CHECK(list[0]["done"] == 1);
    CHECK(list[0]["running"] == 1);
    CHECK(list[0]["waiting"] == 0);
    CHECK((*all)["tenant"]["name"] == "bob");
    while (running->next()) {
    }
  }
}
