// Reads arbitrary bodies with the HTTP APIs' readers (server/http/ollama.hpp, openai.hpp): the
// input's first byte picks the route (Ollama's chat or generate, OpenAI's chat or completions),
// the rest is the body. Whatever comes in, a reader returns a request or a refusal (never a
// crash): a refusal is a 400 (or the 404 of another model) with a message and a code; a request
// names the served model and its values are within docs/http.md's limits. The reply formats then
// write the body's own bytes as a token's text, and what they write is valid JSON (invalid UTF-8
// replaced), as a client must be able to read every line of a stream.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "server/http/ollama.hpp"
#include "server/http/openai.hpp"

using namespace hearth;
using hearth::fuzz::check;

namespace {

constexpr uint32_t n_vocab = 1000, n_ctx = 512;
const http::api_limits limits{"micro", n_vocab, n_ctx};

using parser = result<http::api_request, http::api_error> (*)(std::string_view, const http::api_limits&);
constexpr parser routes[] = {http::parse_ollama_chat, http::parse_ollama_generate, http::parse_openai_chat,
                             http::parse_openai_completion};

void check_request(const http::api_request& r, size_t route) {
  check(r.model == "micro" || r.model == "micro:latest", "a request for another model read");
  const wire::generate_request& g = r.g;
  check(g.max_tokens <= 65536, "max_tokens out of range");
  check(g.sampling.top_k <= n_vocab, "top_k beyond the vocabulary");
  check(g.sampling.top_p >= 0 && g.sampling.top_p <= 1, "top_p out of [0, 1]");
  check(g.sampling.temperature >= 0 && g.sampling.temperature <= 100, "temperature out of range");
  check(g.stop.size() <= 8, "too many stop strings");
  check(g.messages.size() <= 256 + 1, "too many messages");  // + generate's system turn
  if (!r.load_only)
    check(g.prompt.has_value() != !g.messages.empty(), "not exactly one of prompt and messages");
  // OpenAI's routes draw from 0 to 2 and need a max_tokens of at least 1 or none (0).
  if (route >= 2) check(g.sampling.temperature <= 2, "an OpenAI temperature above 2");
}

// Every line a reply format writes is JSON (after "data: " for OpenAI's events).
void check_lines(const std::string& out, bool openai) {
  size_t at = 0;
  for (size_t end; (end = out.find('\n', at)) != std::string::npos; at = end + 1) {
    std::string_view line = std::string_view(out).substr(at, end - at);
    if (line.empty()) continue;
    if (openai) {
      check(line.starts_with("data: "), "an event that is not data");
      line.remove_prefix(6);
      if (line == "[DONE]") continue;
    }
    check(nlohmann::json::accept(line), "a reply line that is not valid JSON");
  }
}

void check_formats(const http::api_request& r, size_t route, std::string_view text) {
  const bool openai = route >= 2, chat = route % 2 == 0;
  auto f = openai ? http::openai_format(chat, r.model, "cmpl-1", r.include_usage)
                  : http::ollama_format(chat, r.model);
  request_event done;
  done.kind = event_kind::done;
  std::string out = f->start() + f->token(text) + f->end(done);
  check_lines(out, openai);
  check(nlohmann::json::accept(f->whole({std::string(text)}, done)), "a whole reply that is not valid JSON");
  // The same text as a model's answer with tools: whatever calls it parses into are valid JSON too.
  for (const chat_format family : {chat_format::qwen25, chat_format::llama31}) {
    const assistant_reply reply = parse_tool_calls(family, text);
    auto g = openai ? http::openai_format(chat, r.model, "cmpl-1", r.include_usage)
                    : http::ollama_format(chat, r.model);
    std::string calls = g->start() + g->token(reply.content);
    if (!reply.calls.empty()) calls += g->calls(reply.calls);
    check_lines(calls + g->end(done), openai);
    check(nlohmann::json::accept(g->whole(reply, done)), "a whole reply with calls that is not valid JSON");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using namespace std::string_view_literals;  // the route byte may be a NUL
  fuzz::write_seeds({
      "\x00{\"model\":\"micro\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":false,"
      "\"options\":{\"temperature\":0,\"top_k\":4,\"num_predict\":8,\"stop\":[\"\\n\"],\"seed\":3}}"sv,
      "\x01{\"model\":\"micro:latest\",\"prompt\":\"lights\",\"raw\":true,\"keep_alive\":\"5m\"}"sv,
      "\x01{\"model\":\"micro\",\"prompt\":\"x\",\"system\":\"be brief\",\"options\":{\"num_ctx\":512}}"sv,
      "\x02{\"model\":\"micro\",\"messages\":[{\"role\":\"developer\",\"content\":[{\"type\":\"text\","
      "\"text\":\"a\"}]},{\"role\":\"user\",\"content\":\"b\"}],\"max_completion_tokens\":9,\"stream\":true,"
      "\"stream_options\":{\"include_usage\":true},\"stop\":\"\\n\",\"seed\":1}"sv,
      "\x03{\"model\":\"micro\",\"prompt\":[\"\xc3\xa9t\xc3\xa9\"],\"max_tokens\":4,\"temperature\":1.5,"
      "\"ignore_eos\":true,\"top_p\":0.5,\"n\":1}"sv,
      "\x03{\"model\":\"micro\",\"prompt\":\"\xff\xfe bad utf-8\"}"sv,
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t route = data[0] % 4;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto r = routes[route](body, limits);
  if (!r) {
    const http::api_error& e = r.error();
    check(e.status == 400 || e.status == 404, "a refusal that is not a 400 or 404");
    check(!e.err.message.empty() && !e.err.code.empty(), "a refusal without a message or code");
    check(nlohmann::json::accept(http::openai_error(e)), "an error object that is not valid JSON");
    return 0;
  }
  check_request(*r, route);
  check_formats(*r, route, body);
  return 0;
}
