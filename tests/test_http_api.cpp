// The HTTP APIs without sockets: Ollama's and OpenAI's bodies read into the shared client
// request (options to the sampler, defaults, refusals naming the field), the endpoint rule, and
// the configuration file's [http] section and HTTP keys.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "server/http/gateway.hpp"
#include "server/http/keys.hpp"
#include "server/http/ollama.hpp"
#include "server/http/openai.hpp"
#include "server/serve_config.hpp"

using namespace hearth;
using namespace hearth::http;
using json = nlohmann::json;
using Catch::Matchers::Contains;

namespace {

const api_limits lim{.model = "tiny", .n_vocab = 600, .n_ctx = 512};

json chat(json extra = json::object()) {
  json b = {{"model", "tiny"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  b.update(extra);
  return b;
}

api_error refusal(const result<api_request, api_error>& r) {
  REQUIRE_FALSE(r.ok());
  return r.error();
}

}  // namespace

TEST_CASE("http api: Ollama options map to the sampler, with Ollama's defaults", "[http]") {
  const auto r = parse_ollama_chat(chat({{"options",
                                          {{"temperature", 0.2},
                                           {"top_k", 5},
                                           {"top_p", 0.5},
                                           {"min_p", 0.1},
                                           {"repeat_penalty", 1.3},
                                           {"repeat_last_n", 32},
                                           {"seed", 42},
                                           {"num_predict", 7},
                                           {"stop", {"\n"}},
                                           {"num_ctx", 256},
                                           {"num_thread", 4}}}})
                                       .dump(),
                                   lim);
  REQUIRE(r.ok());
  const auto& s = r->g.sampling;
  CHECK(s.temperature == Approx(0.2));
  CHECK(s.top_k == 5);
  CHECK(s.top_p == Approx(0.5));
  CHECK(s.min_p == Approx(0.1));
  CHECK(s.repetition_penalty == Approx(1.3));
  CHECK(s.repeat_last_n == 32);
  CHECK(s.seed == 42);
  CHECK_FALSE(r->random_seed);
  CHECK(r->g.max_tokens == 7);
  CHECK(r->g.stop == std::vector<std::string>{"\n"});
  CHECK(r->g.stream);  // Ollama streams unless told not to
  CHECK(r->model == "tiny");
  const auto d = parse_ollama_chat(chat().dump(), lim);
  REQUIRE(d.ok());
  CHECK(d->g.sampling.temperature == Approx(0.8));
  CHECK(d->g.sampling.top_k == 40);
  CHECK(d->g.max_tokens == 0);  // no limit: what the context leaves
  CHECK(d->random_seed);
  CHECK(parse_ollama_chat(chat({{"model", "tiny:latest"}}).dump(), lim).ok());
}

TEST_CASE("http api: Ollama refusals name the field", "[http]") {
  CHECK_THAT(refusal(parse_ollama_chat(chat({{"options", {{"num_ctx", 513}}}}).dump(), lim)).err.message,
             Contains("options.num_ctx") && Contains("512"));
  CHECK_THAT(refusal(parse_ollama_chat(chat({{"format", "json"}}).dump(), lim)).err.message,
             Contains("'format'"));
  CHECK_THAT(refusal(parse_ollama_chat(chat({{"tools", {{{"type", "function"}}}}}).dump(), lim)).err.message,
             Contains("'tools[0].function'"));
  CHECK_THAT(
      refusal(parse_ollama_chat(chat({{"messages", {{{"role", "robot"}, {"content", "x"}}}}}).dump(), lim))
          .err.message,
      Contains("messages[0].role"));
  const json user_call = {{"role", "user"}, {"tool_calls", {{{"function", {{"name", "f"}}}}}}};
  CHECK_THAT(refusal(parse_ollama_chat(chat({{"messages", {user_call}}}).dump(), lim)).err.message,
             Contains("messages[0].tool_calls") && Contains("assistant"));
  CHECK(refusal(parse_ollama_chat(chat({{"model", "other"}}).dump(), lim)).status == 404);
  CHECK(refusal(parse_ollama_chat("{\"model\":", lim)).status == 400);
  CHECK_THAT(refusal(parse_ollama_chat(chat({{"extra", 1}}).dump(), lim)).err.message, Contains("'extra'"));
  const auto load = parse_ollama_chat(chat({{"messages", json::array()}}).dump(), lim);
  REQUIRE(load.ok());
  CHECK(load->load_only);
}

TEST_CASE("http api: OpenAI fields map to the request, and unsupported ones are refused", "[http]") {
  const json msgs =
      json::array({{{"role", "developer"}, {"content", "terse"}},
                   {{"role", "user"},
                    {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}}});
  const auto r = parse_openai_chat(json{{"model", "tiny"},
                                        {"messages", msgs},
                                        {"max_tokens", 9},
                                        {"max_completion_tokens", 5},
                                        {"stop", "END"},
                                        {"seed", 3},
                                        {"stream", true},
                                        {"stream_options", {{"include_usage", true}}}}
                                       .dump(),
                                   lim);
  REQUIRE(r.ok());
  CHECK(r->g.max_tokens == 5);  // the newer name wins
  CHECK(r->g.stop == std::vector<std::string>{"END"});
  CHECK(r->g.sampling.seed == 3);
  CHECK(r->include_usage);
  CHECK(r->g.messages[0].role == "system");
  CHECK(r->g.messages[1].content == "ab");
  CHECK(r->g.sampling.temperature == Approx(1.0));
  const api_error n = refusal(parse_openai_chat(chat({{"n", 2}}).dump(), lim));
  CHECK(n.param == "n");
  CHECK_THAT(openai_error(n), Contains("\"param\":\"n\"") && Contains("invalid_request_error"));
  CHECK(refusal(parse_openai_chat(chat({{"logprobs", true}}).dump(), lim)).param == "logprobs");
  CHECK(
      refusal(parse_openai_chat(chat({{"response_format", {{"type", "json_object"}}}}).dump(), lim)).param ==
      "response_format");
  CHECK(refusal(parse_openai_chat(chat({{"temperature", 3}}).dump(), lim)).param == "temperature");
  const auto c = parse_openai_completion(json{{"model", "tiny"}, {"prompt", {"once"}}}.dump(), lim);
  REQUIRE(c.ok());
  CHECK(*c->g.prompt == "once");
  CHECK(c->g.max_tokens == 16);  // OpenAI's legacy default
  CHECK_FALSE(c->g.stream);
}

TEST_CASE("http api: a non-loopback endpoint needs keys or an explicit opt-in", "[http]") {
  gateway_options o;
  o.endpoint = "0.0.0.0:11434";
  CHECK_THAT(check_http_endpoint(o).error().message, Contains("non-loopback"));
  o.allow_public = true;
  CHECK(check_http_endpoint(o).ok());
  o.allow_public = false;
  o.tenants = {{.name = "a", .http_key_sha256 = sha256_hex("k")}};
  CHECK(check_http_endpoint(o).ok());  // keys, and (by default then) no anonymous tenant
  o.anonymous_tenant = "guest";
  CHECK_FALSE(check_http_endpoint(o).ok());
  o.endpoint = "127.0.0.1:99999";
  CHECK_THAT(check_http_endpoint(o).error().message, Contains("99999"));
  o.endpoint = "[::1]:0";
  CHECK(check_http_endpoint(o).ok());
  o.endpoint = "http://127.0.0.1:8080";  // loopback: the scheme is the mistake, and the message says so
  CHECK_THAT(check_http_endpoint(o).error().message,
             Contains("without a scheme (127.0.0.1:8080)") && !Contains("non-loopback"));
}

TEST_CASE("http api: the [http] section and tenants' HTTP keys are read and checked", "[http]") {
  const auto c = server::parse_serve_config(R"(
[http]
endpoint = "0.0.0.0:8080"
public = true
anonymous_tenant = "guests"
threads = 8
max_body_bytes = 4096

[[tenant]]
name = "voice"
http_key_sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
)",
                                            "home.toml");
  REQUIRE(c.ok());
  CHECK(c->http);
  CHECK(c->http_endpoint == "0.0.0.0:8080");
  CHECK(c->http_public);
  CHECK(c->http_anonymous_tenant == "guests");
  CHECK(c->http_threads == 8);
  CHECK(c->http_max_body_bytes == 4096);
  CHECK(c->engine.tenants[0].http_key_sha256.size() == 64);
  CHECK_FALSE(server::parse_serve_config("").value().http);
  auto error_for = [](const char* text) {
    return server::parse_serve_config(text, "home.toml").error().message;
  };
  CHECK_THAT(error_for("[http]\nendpoint = \"127.0.0.1:70000\"\n"), Contains("home.toml:2: [http].endpoint"));
  CHECK_THAT(error_for("[http]\nanonymous_tenant = \"a b\"\n"), Contains("[http].anonymous_tenant"));
  CHECK_THAT(error_for("[http]\nthreads = 0\n"), Contains("[http].threads"));
  CHECK_THAT(error_for("[[tenant]]\nname = \"a\"\nhttp_key_sha256 = \"ABC\"\n"),
             Contains("home.toml:3: tenant 'a': http_key_sha256"));
}
