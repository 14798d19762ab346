// Feeds arbitrary bytes, as a client would send them, to cpp-httplib's request parser in front of
// the HTTP APIs' readers: a server (httplib::Server, through its protected process_request, as
// cpp-httplib's own fuzzer does) with the gateway's four generation routes, which read their
// bodies as the gateway does (server/http/front_door.hpp: within the limit, decoded) with the same
// readers, and name refusals with the gateway's error handler. Request line,
// headers (oversized ones too), Content-Length and chunked bodies, compressed bodies, invalid
// UTF-8: whatever comes in, the server answers one HTTP response whose status is not a 5xx (a
// malformed request is the client's error), or closes without one; never a crash.

#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_support.hpp"
#include "server/http/front_door.hpp"
#include "server/http/ollama.hpp"
#include "server/http/openai.hpp"

using namespace hearth;
using hearth::fuzz::check;

namespace {

// The request's bytes in, the response's bytes out.
class memory_stream final : public httplib::Stream {
 public:
  explicit memory_stream(std::string_view in) : in_(in) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, in_.size());
    if (n > 0) std::memcpy(ptr, in_.data(), n);  // an empty input's data() may be null
    in_.remove_prefix(n);
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = "127.0.0.1", port = 40000; }
  void get_local_ip_and_port(std::string& ip, int& port) const override { ip = "127.0.0.1", port = 11434; }
  socket_t socket() const override { return INVALID_SOCKET; }
  std::string out;

 private:
  std::string_view in_;
};

class fuzz_server final : public httplib::Server {
 public:
  fuzz_server() {
    using parser = result<http::api_request, http::api_error> (*)(std::string_view, const http::api_limits&);
    const std::pair<const char*, parser> routes[] = {{"/api/chat", http::parse_ollama_chat},
                                                     {"/api/generate", http::parse_ollama_generate},
                                                     {"/v1/chat/completions", http::parse_openai_chat},
                                                     {"/v1/completions", http::parse_openai_completion}};
    // As the gateway's routes: the body read within the limit, then its reader; refusals named.
    for (const auto& [path, parse] : routes)
      Post(path,
           http::limited_body(64 << 10, [parse = parse](const httplib::Request& req, httplib::Response& res) {
             const auto r = parse(req.body, {"micro", 1000, 512});
             if (r) return res.set_content("{}", "application/json");
             res.status = r.error().status;
             res.set_content(http::openai_error(r.error()), "application/json");
           }));
    set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (res.body.empty())
        res.set_content(http::openai_error(http::front_door_error(res.status, req.method, req.path)),
                        "application/json");
    });
    set_payload_max_length(64 << 10);
  }
  //! The response to the request in `in` (empty when the server closes without one).
  std::string serve(std::string_view in) {
    memory_stream s(in);
    bool closed = false;
    process_request(s, /*close_connection=*/true, closed, nullptr);
    return s.out;
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::write_seeds({
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
      "48\r\n\r\n"
      "{\"model\":\"micro\",\"prompt\":\"hi\",\"max_tokens\":4}",
      "POST /api/generate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "10\r\n{\"model\":\"micro\"\r\n14\r\n,\"prompt\":\"lights\"}\r\n0\r\n\r\n",
      "POST /api/chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Length: 30\r\n\r\n"
      "{\"model\":\"micro\",\"messages\":[",
      "GET /v1/models?x=%ff%fe HTTP/1.1\r\nHost: x\r\nX-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n",
      "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n{}",
      "POST /v1/completions HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\n\x1f\x8b\x08",
      "POST /api/chat HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: "
      "8\r\n\r\n--b--\r\n",
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz_server server;
  const std::string out = server.serve({reinterpret_cast<const char*>(data), size});
  if (out.empty()) return 0;
  check(out.starts_with("HTTP/1.1 ") && out.size() >= 12, "a response without a status line");
  const int status = std::atoi(out.substr(9, 3).c_str());
  check(status >= 200 && status < 500, "a status that is not 2xx-4xx");
  return 0;
}
