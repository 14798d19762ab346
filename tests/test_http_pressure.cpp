// The HTTP gateway under pressure: a full queue answers 503 in each API's error shape, and a
// client that stops reading mid-stream holds up neither the engine nor the other clients, until
// the gateway drops it (cpp-httplib's write timeout) and its request is cancelled.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <mutex>

#include "http_fixture.hpp"

using namespace hearth;
using namespace hearth::test;
using json = nlohmann::json;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

// The gateway's log lines, kept for the test to read (the gateway logs from its own threads).
struct log_lines {
  std::mutex m;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      std::lock_guard lock(m);
      lines.push_back(line);
    };
  }
  size_t count(const std::string& part) {
    std::lock_guard lock(m);
    return static_cast<size_t>(std::count_if(
        lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; }));
  }
};

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// The port of `fd`'s local end (getsockname) or its peer's (getpeername); 0 when not an IPv4 socket.
template <class Get>
uint16_t port_of(int fd, Get get) {
  sockaddr_in a{};
  socklen_t n = sizeof a;
  if (get(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0 || a.sin_family != AF_INET) return 0;
  return ntohs(a.sin_port);
}

int queued_bytes(int fd, unsigned long what) {
  int n = 0;
  return ::ioctl(fd, what, &n) == 0 ? n : -1;
}

// A client that sends one request and never reads its reply. Both ends' buffers are made as small
// as the kernel allows (the gateway's end found among this process's descriptors: the gateway
// runs in the test): with the defaults a loopback connection takes megabytes before its writer
// waits, more than a 512-token context can stream; with these it takes some thirty tokens.
struct stalled_client {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int server_end = -1;  // the gateway's descriptor of this connection

  stalled_client(uint16_t port, const std::string& path, const std::string& body) {
    const int least = 1;  // the kernel raises it to its minimum
    REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &least, sizeof least) == 0);
    const sockaddr_in to = loopback(port);
    REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0);
    const uint16_t mine = port_of(fd, ::getsockname);
    REQUIRE(eventually([&] {  // the gateway's thread accepts the connection
      for (int other = 0; other < 4096 && server_end < 0; ++other)
        if (other != fd && port_of(other, ::getsockname) == port && port_of(other, ::getpeername) == mine)
          server_end = other;
      return server_end >= 0;
    }));
    REQUIRE(::setsockopt(server_end, SOL_SOCKET, SO_SNDBUF, &least, sizeof least) == 0);
    std::string request = "POST ";
    request += path;
    request += " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ";
    request += std::to_string(body.size());
    request += "\r\n\r\n";
    request += body;
    REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  }
  ~stalled_client() { ::close(fd); }

  //! The client's window is full: the gateway holds bytes it cannot send, and what came waits unread.
  bool stalled() const { return queued_bytes(server_end, SIOCOUTQNSD) > 0 && queued_bytes(fd, FIONREAD) > 0; }

  //! Reads what the gateway sent until it closed the connection.
  std::string read_to_end() const {
    const timeval limit{.tv_sec = 20, .tv_usec = 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    std::string got;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
    return got;
  }
};

// Whether the engine's figures (which the metrics actor takes after each terminal event) count
// `cancelled` and `done` requests, over every tenant.
bool counted(engine& eng, uint64_t cancelled, uint64_t done) {
  return eventually([&] {
    const auto m = eng.metrics();
    uint64_t c = 0, d = 0;
    for (const tenant_metrics& t : m->tenants) c += t.cancelled, d += t.done;
    return c == cancelled && d == done;
  });
}

}  // namespace

TEST_CASE("http: a full queue is 503, as an OpenAI error object and as Ollama's error", "[http]") {
  // One sequence runs and one may wait: a third request finds the queue full.
  engine_config cfg;
  cfg.max_seqs = 1;
  cfg.max_waiting = 1;
  auto s = http_served::start({}, cfg, backend_script{.delay = 20ms});
  std::atomic<bool> release{false};
  std::promise<void> first_token;
  auto running = std::async(std::launch::async, [&] {
    auto c = s.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/api/generate";
    req.body = long_generation().dump();
    req.set_header("Content-Type", "application/json");
    bool first = true;
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      if (std::exchange(first, false)) first_token.set_value();
      return !release.load();  // then hang up: the request is cancelled
    };
    c.send(req);
  });
  REQUIRE(first_token.get_future().wait_for(30s) == std::future_status::ready);
  auto waiting = std::async(std::launch::async, [&] {
    auto c = s.client();
    return post(c, "/api/chat", chat_body(false, 2))->status;
  });
  REQUIRE(eventually([&] {
    const auto g = *s.eng->gauges();
    return g.running == 1 && g.waiting == 1;
  }));

  auto c = s.client();
  auto refused = post(c, "/v1/chat/completions", openai_body(false, 2));
  CHECK(refused->status == 503);
  const json e = json::parse(refused->body)["error"];
  CHECK(e["code"] == "queue_full");
  CHECK(e["type"] == "server_error");
  CHECK_THAT(e["message"].get<std::string>(), Contains("queue is full"));
  for (bool stream : {false, true}) {  // a stream is refused before it starts: a status, not a chunk
    auto ollama = post(c, "/api/chat", chat_body(stream, 2));
    CHECK(ollama->status == 503);
    CHECK(ollama->get_header_value("Content-Type") == "application/json");
    CHECK_THAT(json::parse(ollama->body)["error"].get<std::string>(), Contains("queue is full"));
  }

  release = true;
  running.get();
  CHECK(waiting.get() == 200);  // the waiting request runs once the first has left
  CHECK(engine_idle(*s.eng));
  CHECK(counted(*s.eng, 1, 1));
}

TEST_CASE("http: a client that stops reading holds up neither the engine nor other clients, then is dropped",
          "[http]") {
  // 40 ms a step: the stalled stream's 300 tokens would take 12 s, so it still runs when the
  // gateway drops its client, 5 s (cpp-httplib's write timeout) after its window filled.
  log_lines log;
  auto s = http_served::start({.log = log.sink()}, {}, backend_script{.delay = 40ms});
  stalled_client slow(s.gw->port(), "/api/generate", long_generation().dump());
  REQUIRE(eventually([&] { return slow.stalled(); }));

  // Another client's stream runs to its end, every token, while the first one's writer waits.
  auto c = s.client();
  auto other = post(c, "/api/chat", chat_body(true, 8));
  REQUIRE(other->status == 200);
  const auto lines = ndjson(other->body);
  std::string text;
  for (const json& line : lines) text += line["message"]["content"].get<std::string>();
  CHECK(text == oracle_chat(turn, 8));
  CHECK(lines.back()["done"] == true);
  CHECK(log.count("client left mid-stream") == 0);  // the stalled client is still connected
  CHECK(s.gw->busy());
  CHECK(s.eng->gauges()->running == 1);  // and its request still runs

  // The gateway gives up on the stalled client: its request is cancelled, its KV blocks freed.
  REQUIRE(eventually([&] { return log.count("client left mid-stream") == 1; }));
  CHECK(engine_idle(*s.eng));
  CHECK(eventually([&] { return !s.gw->busy(); }));
  CHECK(counted(*s.eng, 1, 1));
  // What the stalled client finally reads is a stream cut short: no last line.
  const std::string got = slow.read_to_end();
  CHECK_THAT(got, Contains("\"done\":false"));
  CHECK_THAT(got, !Contains("\"done\":true"));
}
