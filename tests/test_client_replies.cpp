// The C++ client against a fake server (a raw ROUTER socket over loopback) that sends replies
// whose fields have the wrong type: the client skips them or reads the fields as absent, as the
// Python client does (clients/cpp/README.md), and never throws.
#include <catch2/catch.hpp>

#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "clients/cpp/client.hpp"

using namespace hearth;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

//! Just enough of a server to connect to: it answers `ping` with a `pong` and any other request
//! but `cancel` with what `script` returns for it, each reply sent as it is, over one ROUTER socket.
class fake_server {
 public:
  using script_fn = std::function<std::vector<json>(const json& request)>;

  explicit fake_server(script_fn script) : script_(std::move(script)) {
    router_.set(zmq::sockopt::linger, 0);
    router_.bind("tcp://127.0.0.1:*");
    endpoint_ = router_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { run(); });  // the socket is the thread's from here on
  }
  ~fake_server() {
    stop_ = true;
    thread_.join();
  }
  fake_server(const fake_server&) = delete;
  fake_server& operator=(const fake_server&) = delete;

  client::options options() const {
    return {.endpoint = endpoint_, .connect_timeout = 5s, .reply_timeout = 5s};
  }

 private:
  void run() {
    while (!stop_) {
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 10ms);
      std::vector<zmq::message_t> in;
      if (!zmq::recv_multipart(router_, std::back_inserter(in), zmq::recv_flags::dontwait) || in.size() != 3)
        continue;
      const json request = json::parse(in[2].to_string_view());  // the client's own: well formed
      std::vector<json> out;
      if (request["type"] == "ping")
        out.push_back({{"type", "pong"}, {"id", request["id"]}, {"protocol", 1}});
      else if (request["type"] != "cancel")  // a cancel has no reply
        out = script_(request);
      for (const json& reply : out) {
        const std::string body = reply.dump();
        const std::array<zmq::const_buffer, 3> frames = {zmq::buffer(in[0].data(), in[0].size()),
                                                         zmq::str_buffer("hearth/1"), zmq::buffer(body)};
        zmq::send_multipart(router_, frames);
      }
    }
  }

  script_fn script_;
  zmq::context_t ctx_{1};
  zmq::socket_t router_{ctx_, zmq::socket_type::router};
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::unique_ptr<client::client> connect(const fake_server& s) {
  auto c = client::client::connect(s.options());
  if (!c) FAIL(c.error().code << ": " << c.error().message);
  return std::move(*c);
}

//! The generation of `prompt` to its end: the tokens handed out and how it ended.
std::pair<std::vector<client::token>, client::outcome<client::completion>> generate(client::client& c) {
  std::vector<client::token> tokens;
  auto done =
      c.generate({.prompt = "x", .first_token_timeout = 5s, .idle_timeout = 5s}, [&](const client::token& t) {
        tokens.push_back(t);
        return true;
      });
  return {std::move(tokens), std::move(done)};
}

json message(const char* type, const json& id, json fields = json::object()) {
  fields["type"] = type;
  fields["id"] = id;
  return fields;
}

}  // namespace

TEST_CASE("a token whose fields have the wrong type is read without them, or skipped without text",
          "[client]") {
  fake_server s([](const json& r) {
    const json& id = r["id"];
    return std::vector<json>{
        message("accepted", id, {{"prompt_tokens", "three"}}),
        message("token", id, {{"index", "x"}, {"token", "y"}, {"text", "a"}}),  // index and id mistyped
        message("token", id, {{"index", 1}, {"token", 5}, {"text", 7}}),        // no text: skipped
        message("token", id, {{"index", 1}, {"token", -3.5}, {"text", nullptr}}),
        message("token", id, {{"index", 1}, {"token", 6}, {"text", "b"}}),
        message("done", id, {{"finish_reason", "length"}, {"usage", {{"completion_tokens", 2}}}})};
  });
  auto c = connect(s);
  const auto [tokens, done] = generate(*c);
  REQUIRE(tokens.size() == 2);
  CHECK(tokens[0].index == 0);  // its place in the completion
  CHECK(tokens[0].id == -1);    // no id given
  CHECK(tokens[0].text == "a");
  CHECK(tokens[1].index == 1);
  CHECK(tokens[1].id == 6);
  CHECK(tokens[1].text == "b");
  REQUIRE(done.ok());
  CHECK(done->text == "ab");
  CHECK(done->tokens == std::vector<int32_t>{-1, 6});
  CHECK(done->completion_tokens == 2);
}

TEST_CASE("a done whose fields have the wrong type ends the stream with their defaults", "[client]") {
  fake_server s([](const json& r) {
    const json& id = r["id"];
    return std::vector<json>{message("token", id, {{"index", 0}, {"token", 4}, {"text", "hi"}}),
                             message("done", id,
                                     {{"finish_reason", 3},
                                      {"text", 9},
                                      {"usage", 5},
                                      {"timings", {{"ttft_ms", "fast"}, {"e2e_ms", 12.5}}},
                                      {"preemptions", "2"}})};
  });
  auto c = connect(s);
  const auto [tokens, done] = generate(*c);
  CHECK(tokens.size() == 1);
  REQUIRE(done.ok());
  CHECK(done->finish_reason.empty());
  CHECK(done->text == "hi");  // the streamed text: done's is not a string
  CHECK(done->prompt_tokens == 0);
  CHECK(done->completion_tokens == 0);
  CHECK(done->ttft_ms == 0);
  CHECK(done->e2e_ms == 12.5);  // its well-typed neighbour is kept
  CHECK(done->preemptions == 0);
  // A count out of its type's range is as wrong as a string.
  fake_server big([](const json& r) {
    return std::vector<json>{message(
        "done", r["id"],
        {{"finish_reason", "eos"}, {"preemptions", -1}, {"usage", {{"prompt_tokens", uint64_t{1} << 40}}}})};
  });
  auto c2 = connect(big);
  const auto [none, big_done] = generate(*c2);
  REQUIRE(big_done.ok());
  CHECK(big_done->finish_reason == "eos");
  CHECK(big_done->preemptions == 0);
  CHECK(big_done->prompt_tokens == 0);
}

TEST_CASE("an error whose fields have the wrong type is still an error, of code protocol", "[client]") {
  fake_server s([](const json& r) {
    return std::vector<json>{
        message("error", r["id"], {{"code", 3}, {"message", {"not", "text"}}, {"retry_after_ms", "soon"}})};
  });
  auto c = connect(s);
  const auto [tokens, done] = generate(*c);
  CHECK(tokens.empty());
  REQUIRE_FALSE(done.ok());
  CHECK(done.error().code == "protocol");
  CHECK(done.error().message.empty());
  CHECK(done.error().retry_after_ms == 0);
  // The one reply of a call, too.
  const auto stats = c->stats();
  REQUIRE_FALSE(stats.ok());
  CHECK(stats.error().code == "protocol");
}

TEST_CASE("a reply whose type or id is not a string is dropped", "[client]") {
  fake_server s([](const json& r) {
    const json& id = r["id"];
    json no_type = message("token", id, {{"index", 0}, {"token", 1}, {"text", "lost"}});
    no_type["type"] = 5;
    return std::vector<json>{no_type, message("done", 7, {{"finish_reason", "eos"}}),  // about no request
                             message("token", id, {{"index", 0}, {"token", 2}, {"text", "kept"}}),
                             message("done", id, {{"finish_reason", "eos"}})};
  });
  auto c = connect(s);
  const auto [tokens, done] = generate(*c);
  REQUIRE(tokens.size() == 1);
  CHECK(tokens[0].text == "kept");
  REQUIRE(done.ok());
  CHECK(done->finish_reason == "eos");
}

TEST_CASE("a `refused` beside a stream does not end it", "[client]") {
  fake_server s([](const json& r) {
    const json& id = r["id"];
    return std::vector<json>{message("accepted", id, {{"prompt_tokens", 1}}),
                             message("token", id, {{"index", 0}, {"token", 5}, {"text", "a"}}),
                             message("refused", id, {{"code", "bad_request"}, {"message", "field 'extra'"}}),
                             message("token", id, {{"index", 1}, {"token", 6}, {"text", "b"}}),
                             message("done", id, {{"finish_reason", "length"}})};
  });
  auto c = connect(s);
  const auto [tokens, done] = generate(*c);
  CHECK(tokens.size() == 2);
  REQUIRE(done.ok());
  CHECK(done->text == "ab");
}

TEST_CASE("wait with a descriptor returns once it is readable, and still takes the messages", "[client]") {
  fake_server s([](const json& r) {
    return std::vector<json>{message("accepted", r["id"], {{"prompt_tokens", 1}}),
                             message("done", r["id"], {{"finish_reason", "length"}})};
  });
  auto c = connect(s);
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  REQUIRE(fd >= 0);
  CHECK_FALSE(c->wait(20ms, fd));  // neither a message nor the descriptor: the timeout
  // Written by another thread while it waits: back long before its timeout, without a message.
  const auto start = std::chrono::steady_clock::now();
  std::thread writer([fd] {
    std::this_thread::sleep_for(20ms);
    const uint64_t one = 1;
    CHECK(write(fd, &one, sizeof one) == sizeof one);
  });
  CHECK_FALSE(c->wait(30s, fd));
  CHECK(std::chrono::steady_clock::now() - start < 20s);
  writer.join();
  uint64_t count = 0;
  CHECK(read(fd, &count, sizeof count) == sizeof count);  // the caller drains it
  CHECK(count == 1);
  // A request's replies still arrive through it.
  auto st = c->start({.prompt = "x"});
  REQUIRE(st.ok());
  for (int i = 0; i < 100 && !st->ended(); ++i) {
    (void)c->wait(100ms, fd);
    while (!st->ended() && st->ready()) (void)st->next();
  }
  REQUIRE(st->ended());
  CHECK(st->result().ok());
  close(fd);
}
