#pragma once
// An engine on the micro model behind the HTTP gateway on a free loopback port, for the HTTP
// tests (scripted_backend.hpp: a delay per step), and cpp-httplib's client to talk to it.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "gateway_fixture.hpp"
#include "server/http/gateway.hpp"

namespace hearth::test {

inline constexpr const char* micro_name = "micro";

struct http_served {
  std::unique_ptr<engine> eng;
  std::unique_ptr<http::gateway> gw;

  //! `m` is served as "micro" whatever it is (test_http_tools serves micros with other templates).
  static http_served start(http::gateway_options opt = {}, engine_config cfg = {}, backend_script script = {},
                           const engine_model& m = micro()) {
    auto e = scripted_engine(m, 4096, std::move(cfg), std::move(script));
    if (opt.endpoint == http::gateway_options{}.endpoint) opt.endpoint = "127.0.0.1:0";
    opt.model.name = micro_name;
    opt.model.architecture = "llama";
    opt.model.n_ctx = e->worker().n_ctx;
    opt.model.n_vocab = static_cast<uint32_t>(e->tok().n_vocab());
    auto g = http::gateway::start(*e, std::move(opt));
    if (!g) FAIL(g.error().message);
    return {std::move(e), std::move(*g)};
  }

  ~http_served() {
    if (gw) gw->stop(std::chrono::milliseconds(0));
  }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", gw->port());
    c.set_read_timeout(20, 0);
    return c;
  }
};

//! The chat turn the HTTP tests send.
inline const std::vector<chat_message> turn = {{"user", "the kitchen light number 3"}};

//! An Ollama /api/chat body of `turn`, greedy, to `n` tokens.
inline nlohmann::json chat_body(bool stream, uint32_t n) {
  return {{"model", micro_name},
          {"messages", nlohmann::json::array({{{"role", "user"}, {"content", turn[0].content}}})},
          {"stream", stream},
          {"options", {{"temperature", 0}, {"repeat_penalty", 1.0}, {"num_predict", n}}}};
}

//! An OpenAI /v1/chat/completions body of `turn`, greedy, to `n` tokens.
inline nlohmann::json openai_body(bool stream, uint32_t n) {
  return {{"model", micro_name},
          {"messages", nlohmann::json::array({{{"role", "user"}, {"content", turn[0].content}}})},
          {"stream", stream},
          {"temperature", 0},
          {"max_tokens", n}};
}

//! An Ollama /api/generate body streaming the long prompt's greedy completion: 300 tokens, unless
//! its client leaves.
inline nlohmann::json long_generation() {
  return {{"model", micro_name},
          {"prompt", long_prompt()},
          {"raw", true},
          {"options", {{"temperature", 0}, {"repeat_penalty", 1.0}, {"num_predict", 300}}}};
}

//! Polls `ready` every 10 ms for up to `limit`; true once it holds.
template <class Ready>
bool eventually(Ready ready, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  for (const auto deadline = std::chrono::steady_clock::now() + limit;
       std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(10)))
    if (ready()) return true;
  return ready();
}

//! POSTs `body` as JSON; fails the test when no reply comes.
inline httplib::Result post(httplib::Client& c, const std::string& path, const nlohmann::json& body,
                            const httplib::Headers& headers = {}) {
  auto r = c.Post(path.c_str(), headers, body.dump(), "application/json");
  if (!r) FAIL("POST " << path << ": no reply (" << httplib::to_string(r.error()) << ")");
  return r;
}

//! The lines of an NDJSON body, each parsed; every line ends with a newline.
inline std::vector<nlohmann::json> ndjson(const std::string& body) {
  std::vector<nlohmann::json> lines;
  size_t at = 0;
  for (size_t nl; (nl = body.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(nlohmann::json::parse(body.substr(at, nl - at)));
  REQUIRE(at == body.size());  // every line ends with a newline
  return lines;
}

//! The `data:` payloads of a server-sent event stream, in order.
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t end; (end = body.find("\n\n", at)) != std::string::npos; at = end + 2) {
    const std::string event = body.substr(at, end - at);
    REQUIRE(event.starts_with("data: "));
    out.push_back(event.substr(6));
  }
  REQUIRE(at == body.size());
  return out;
}

//! The text of generated tokens as a stream gives it (whole characters, leading spaces kept),
//! and as JSON carries it: invalid UTF-8 replaced (U+FFFD), as the replies write it.
inline std::string streamed_text(const std::vector<int32_t>& ids) {
  stream_decoder d(*micro().tok);
  std::string text;
  for (int32_t id : ids) text += d.push(id);
  text += d.flush();
  return nlohmann::json::parse(
      nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

//! The greedy completion of `messages` alone, as text: the oracle the replies are held to.
inline std::string oracle_chat(const std::vector<chat_message>& messages, uint32_t max_tokens) {
  return streamed_text(oracle(encode_chat(*micro().tok, messages).value(), max_tokens));
}

//! The greedy completion of the raw `prompt` alone, as text.
inline std::string oracle_raw(const std::string& prompt, uint32_t max_tokens) {
  return streamed_text(oracle(raw_prompt(prompt), max_tokens));
}

}  // namespace hearth::test
