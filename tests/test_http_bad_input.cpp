// Bad input to the HTTP gateway over a real socket, as raw bytes: oversized header lines and URIs,
// chunked bodies (well-formed, broken, and over the limit), invalid UTF-8, a 10 MB body, and a
// small gzip body that inflates to 10 MB. Each gets its proper 4xx with a body naming why, never
// a crash, and the server serves on (the fuzz harnesses, tests/fuzz/fuzz_http_*.cpp, cover the
// same parsers with mutated input, without a socket).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "http_fixture.hpp"

using namespace hearth;
using namespace hearth::test;
using json = nlohmann::json;
using Catch::Matchers::Contains;
using namespace std::string_view_literals;

namespace {

struct raw_reply {
  int status = 0;
  std::string body;
};

// Sends `request` on a fresh connection while reading the reply on this thread, so a server that
// answers before the request is all sent (a refusal of a large body) is read before any reset.
// The first reply, by its Content-Length; status 0 when none came. `hang_up`: shut the sending
// side once sent (a server then sees the client gone, and writes it nothing).
raw_reply raw_exchange(uint16_t port, const std::string& request, bool hang_up = false) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  const timeval timeout{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::thread writer([&] {
    for (size_t at = 0; at < request.size();) {
      const ssize_t n = ::send(fd, request.data() + at, request.size() - at, MSG_NOSIGNAL);
      if (n <= 0) break;  // the server closed: it answered already
      at += static_cast<size_t>(n);
    }
    if (hang_up) ::shutdown(fd, SHUT_WR);
  });
  std::string in;
  raw_reply r;
  for (char buf[65536];;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
    const size_t head_end = in.find("\r\n\r\n"), length_at = in.find("Content-Length: ");
    if (head_end == std::string::npos || length_at == std::string::npos || length_at > head_end) continue;
    const size_t length = std::stoul(in.substr(length_at + 16));
    if (in.size() < head_end + 4 + length) continue;
    r.body = in.substr(head_end + 4, length);
    break;
  }
  ::shutdown(fd, SHUT_RDWR);  // a writer still sending stops
  writer.join();
  ::close(fd);
  if (in.empty()) return r;
  REQUIRE(in.starts_with("HTTP/1.1 "));
  r.status = std::stoi(in.substr(9, 3));
  return r;
}

std::string post(const std::string& path, const std::string& headers, const std::string& body) {
  std::string r = "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n";
  r += headers;
  r += "\r\n";
  r += body;
  return r;
}

std::string with_length(const std::string& path, const std::string& body, const std::string& headers = "") {
  return post(path, headers + "Content-Length: " + std::to_string(body.size()) + "\r\n", body);
}

std::string chunked(const std::string& body, size_t piece) {
  std::string out;
  char size[32];
  for (size_t at = 0; at < body.size(); at += piece) {
    const std::string part = body.substr(at, piece);
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    out += size;
    out += part;
    out += "\r\n";
  }
  return out + "0\r\n\r\n";
}

std::string gzip(const std::string& text) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);  // 15 + 16: gzip
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string completion(const std::string& prompt) {
  return json{{"model", micro_name}, {"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}}.dump();
}

// The OpenAI error object's message, checking its shape.
std::string openai_message(const raw_reply& r) {
  const json j = json::parse(r.body);
  CHECK(j["error"]["type"] == "invalid_request_error");
  return j["error"]["message"].get<std::string>();
}

}  // namespace

TEST_CASE("http bad input: oversized headers and URIs, broken requests are 4xx naming why", "[http]") {
  auto s = http_served::start();
  const uint16_t port = s.gw->port();
  const std::string ok = completion("the kitchen light");
  auto big_header =
      raw_exchange(port, with_length("/v1/completions", ok, "X-Big: " + std::string(100000, 'a') + "\r\n"));
  CHECK(big_header.status == 400);
  CHECK_THAT(openai_message(big_header), Contains("could not be read"));
  auto long_uri = raw_exchange(port, "GET /" + std::string(10000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(long_uri.status == 414);
  CHECK_THAT(json::parse(long_uri.body)["error"].get<std::string>(), Contains("URI"));
  auto garbage = raw_exchange(port, std::string("\x00\xff GARBAGE\r\n\r\n"sv));
  CHECK(garbage.status == 400);
  // Less than its Content-Length, then gone: nothing to answer, nothing held.
  auto short_body = raw_exchange(port, post("/api/generate", "Content-Length: 1000\r\n", "{}"), true);
  CHECK(short_body.status == 0);
  auto bad_path = raw_exchange(port, "GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(bad_path.status == 404);
  CHECK(json::parse(bad_path.body).contains("error"));  // valid JSON: the path's bytes replaced
  // Served on: the same body with no header to refuse.
  auto after = raw_exchange(port, with_length("/v1/completions", ok));
  CHECK(after.status == 200);
  CHECK(engine_idle(*s.eng));
}

TEST_CASE("http bad input: chunked bodies are read, refused when broken or over the limit", "[http]") {
  auto s = http_served::start();
  const uint16_t port = s.gw->port();
  const std::string body = completion("the kitchen light number 3");
  auto plain = raw_exchange(port, with_length("/v1/completions", body));
  REQUIRE(plain.status == 200);
  auto pieces =
      raw_exchange(port, post("/v1/completions", "Transfer-Encoding: chunked\r\n", chunked(body, 7)));
  REQUIRE(pieces.status == 200);
  CHECK(json::parse(pieces.body)["choices"][0]["text"] == json::parse(plain.body)["choices"][0]["text"]);
  auto broken =
      raw_exchange(port, post("/api/generate", "Transfer-Encoding: chunked\r\n", "zz\r\nabc\r\n0\r\n\r\n"));
  CHECK(broken.status == 400);
  CHECK_THAT(json::parse(broken.body)["error"].get<std::string>(), Contains("could not be read"));
  // 2 MiB in 4 KiB chunks, over the default limit of 1 MiB: cpp-httplib's own limit reads only
  // Content-Length, so the gateway counts what it reads.
  const std::string large = completion(std::string(2 << 20, 'a'));
  auto over =
      raw_exchange(port, post("/v1/completions", "Transfer-Encoding: chunked\r\n", chunked(large, 4096)));
  CHECK(over.status == 413);
  CHECK_THAT(openai_message(over), Contains("larger than the server's limit"));
  CHECK(raw_exchange(port, with_length("/v1/completions", body)).status == 200);
  CHECK(engine_idle(*s.eng));
}

TEST_CASE("http bad input: invalid UTF-8, a 10 MB body and a gzip bomb are refused at the limit", "[http]") {
  auto s = http_served::start();  // [http].max_body_bytes: its default, 1 MiB
  const uint16_t port = s.gw->port();
  std::string bad_utf8 = completion("xx");
  bad_utf8.replace(bad_utf8.find("xx"), 2, "\xff\xfe");
  auto invalid = raw_exchange(port, with_length("/v1/completions", bad_utf8));
  CHECK(invalid.status == 400);
  CHECK_THAT(openai_message(invalid), Contains("UTF-8"));
  const std::string ten_mb = completion(std::string(10 << 20, 'a'));
  auto big = raw_exchange(port, with_length("/v1/completions", ten_mb));
  CHECK(big.status == 413);
  CHECK_THAT(openai_message(big), Contains("larger than the server's limit"));
  auto ollama_big = raw_exchange(port, with_length("/api/generate", ten_mb));
  CHECK(ollama_big.status == 413);
  CHECK_THAT(json::parse(ollama_big.body)["error"].get<std::string>(), Contains("limit"));
  // About 10 KB on the wire, 10 MB once inflated: the limit holds for what the body decodes to.
  const std::string bomb = gzip(ten_mb);
  REQUIRE(bomb.size() < 64 << 10);
  auto inflated = raw_exchange(port, with_length("/v1/completions", bomb, "Content-Encoding: gzip\r\n"));
  CHECK(inflated.status == 413);
  // A small gzip body is read as the JSON it holds.
  auto small = raw_exchange(
      port, with_length("/v1/completions", gzip(completion("lights")), "Content-Encoding: gzip\r\n"));
  CHECK(small.status == 200);
  CHECK(engine_idle(*s.eng));
}
