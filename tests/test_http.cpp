// The HTTP gateway over real loopback sockets, driven by cpp-httplib's client: Ollama's and
// OpenAI's routes, the same greedy text as a generation alone, streaming (NDJSON and SSE), the
// errors each API answers, quotas and keys, and a client that leaves mid-stream.
#include <catch2/catch.hpp>

#include <future>
#include <tuple>

#include "http_fixture.hpp"
#include "scratch_dir.hpp"
#include "server/http/keys.hpp"

using namespace hearth;
using namespace hearth::test;
using json = nlohmann::json;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;

TEST_CASE("http: Ollama's model routes and the root say what runs", "[http]") {
  auto s = http_served::start();
  auto c = s.client();
  auto root = c.Get("/");
  REQUIRE(root);
  CHECK(root->status == 200);
  CHECK(root->body == "Ollama is running");
  auto head = c.Head("/");
  REQUIRE(head);
  CHECK(head->status == 200);
  CHECK(head->body.empty());
  CHECK(json::parse(c.Get("/api/version")->body).contains("version"));
  const json tags = json::parse(c.Get("/api/tags")->body);
  REQUIRE(tags["models"].size() == 1);
  CHECK(tags["models"][0]["name"] == "micro:latest");
  CHECK(json::parse(c.Get("/api/ps")->body)["models"][0]["model"] == "micro:latest");
  auto show = post(c, "/api/show", {{"model", "micro"}});
  CHECK(show->status == 200);
  CHECK(json::parse(show->body)["model_info"]["llama.context_length"] == 512);
  CHECK(post(c, "/api/show", {{"model", "other"}})->status == 404);
  const json models = json::parse(c.Get("/v1/models")->body);
  CHECK(models["object"] == "list");
  CHECK(models["data"][0]["id"] == "micro");
  auto missing = c.Get("/api/nothing");
  CHECK(missing->status == 404);
  CHECK(json::parse(missing->body).contains("error"));
}

TEST_CASE("http: /health and /ready answer without the engine, /ready refuses once draining", "[http]") {
  // A backend that takes a second per step: the queue is busy, the probes are not held up.
  auto s = http_served::start({}, {}, backend_script{.delay = 1000ms});
  auto c = s.client();
  auto busy = std::async(std::launch::async, [&] {
    auto c2 = s.client();
    return post(c2, "/api/generate",
                {{"model", "micro"}, {"prompt", "hi"}, {"stream", false}, {"options", {{"num_predict", 2}}}})
        ->status;
  });
  std::this_thread::sleep_for(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(c.Get("/health")->status == 200);
  CHECK(c.Get("/ready")->status == 200);
  CHECK(std::chrono::steady_clock::now() - t0 < 500ms);
  s.gw->drain();
  CHECK(c.Get("/ready")->status == 503);
  CHECK(post(c, "/api/chat", chat_body(false, 4))->status == 503);
  CHECK(busy.get() == 200);  // admitted before the drain: it runs to its end
}

TEST_CASE("http: /api/chat gives a generation's greedy text, streamed or whole, with Ollama's usage",
          "[http]") {
  auto s = http_served::start();
  auto c = s.client();
  const std::string expected = oracle_chat(turn, 24);
  auto whole = post(c, "/api/chat", chat_body(false, 24));
  REQUIRE(whole->status == 200);
  const json w = json::parse(whole->body);
  CHECK(w["message"]["content"] == expected);
  CHECK(w["done"] == true);
  CHECK(w["eval_count"].get<uint32_t>() <= 24);
  CHECK(w["prompt_eval_count"].get<uint32_t>() == encode_chat(*micro().tok, turn).value().size());
  for (const char* f : {"total_duration", "prompt_eval_duration", "eval_duration", "load_duration"})
    CHECK(w[f].is_number_integer());
  CHECK(w["total_duration"].get<int64_t>() >= w["eval_duration"].get<int64_t>());

  auto streamed = post(c, "/api/chat", chat_body(true, 24));
  REQUIRE(streamed->status == 200);
  CHECK(streamed->get_header_value("Content-Type") == "application/x-ndjson");
  const auto lines = ndjson(streamed->body);
  REQUIRE(lines.size() >= 2);
  std::string text;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    CHECK(lines[i]["done"] == false);
    text += lines[i]["message"]["content"].get<std::string>();
  }
  CHECK(text == expected);
  CHECK(lines.back()["done"] == true);
  CHECK(lines.back()["eval_count"] == w["eval_count"]);
  CHECK(s.gw->endpoint().starts_with("127.0.0.1:"));
}

TEST_CASE("http: /api/generate templates its prompt unless raw, and loads with no prompt", "[http]") {
  auto s = http_served::start();
  auto c = s.client();
  const json opts = {{"temperature", 0}, {"repeat_penalty", 1.0}, {"num_predict", 16}};
  auto templated =
      post(c, "/api/generate",
           {{"model", "micro"}, {"prompt", turn[0].content}, {"stream", false}, {"options", opts}});
  CHECK(json::parse(templated->body)["response"] == oracle_chat(turn, 16));
  auto raw = post(
      c, "/api/generate",
      {{"model", "micro"}, {"prompt", long_prompt()}, {"raw", true}, {"stream", false}, {"options", opts}});
  CHECK(json::parse(raw->body)["response"] == oracle_raw(long_prompt(), 16));
  CHECK(json::parse(raw->body)["done_reason"] == "length");
  const json load = json::parse(post(c, "/api/generate", {{"model", "micro"}})->body);
  CHECK(load["done"] == true);
  CHECK(load["done_reason"] == "load");
}

TEST_CASE("http: Ollama options reach the sampler and bad ones are refused naming the field", "[http]") {
  auto s = http_served::start();
  auto c = s.client();
  auto sampled = [&](uint64_t seed) {
    json b = chat_body(false, 12);
    b["options"] = {
        {"temperature", 1.5}, {"top_k", 50}, {"seed", seed}, {"num_predict", 12}, {"repeat_penalty", 1.0}};
    return json::parse(post(c, "/api/chat", b)->body)["message"]["content"].get<std::string>();
  };
  CHECK(sampled(7) == sampled(7));
  auto refused = [&](json options, const std::string& field) {
    json b = chat_body(false, 4);
    b["options"] = std::move(options);
    auto r = post(c, "/api/chat", b);
    CHECK(r->status == 400);
    CHECK_THAT(json::parse(r->body)["error"].get<std::string>(), Contains(field));
  };
  refused({{"num_ctx", 100000}}, "options.num_ctx");
  refused({{"top_p", 0}}, "options.top_p");
  refused({{"mirostat", 1}}, "options.mirostat");
  json b = chat_body(false, 4);
  b["options"]["num_ctx"] = 512;  // the model's context: accepted
  b["keep_alive"] = "5m";
  CHECK(post(c, "/api/chat", b)->status == 200);
  b["format"] = "json";
  auto fmt = post(c, "/api/chat", b);
  CHECK(fmt->status == 400);
  CHECK_THAT(json::parse(fmt->body)["error"].get<std::string>(), Contains("'format'"));
  CHECK(c.Post("/api/chat", "{not json", "application/json")->status == 400);
}

TEST_CASE("http: OpenAI chat completions stream SSE ending with [DONE], usage when asked", "[http]") {
  auto s = http_served::start();
  auto c = s.client();
  const std::string expected = oracle_chat(turn, 20);
  auto whole = post(c, "/v1/chat/completions", openai_body(false, 20));
  REQUIRE(whole->status == 200);
  const json w = json::parse(whole->body);
  CHECK(w["object"] == "chat.completion");
  CHECK(w["choices"][0]["message"]["content"] == expected);
  CHECK(w["usage"]["total_tokens"] ==
        w["usage"]["prompt_tokens"].get<int>() + w["usage"]["completion_tokens"].get<int>());

  json b = openai_body(true, 20);
  b["stream_options"] = {{"include_usage", true}};
  auto r = post(c, "/v1/chat/completions", b);
  CHECK(r->get_header_value("Content-Type") == "text/event-stream");
  const auto events = sse_data(r->body);
  REQUIRE(events.size() >= 4);
  CHECK(events.back() == "[DONE]");
  std::string text;
  for (size_t i = 0; i + 2 < events.size(); ++i) {  // all but the usage chunk and [DONE]
    const json chunk = json::parse(events[i]);
    CHECK(chunk["object"] == "chat.completion.chunk");
    if (!chunk["choices"].empty()) text += chunk["choices"][0]["delta"].value("content", "");
  }
  CHECK(text == expected);
  const json usage = json::parse(events[events.size() - 2]);
  CHECK(usage["choices"].empty());
  CHECK(usage["usage"]["completion_tokens"] == w["usage"]["completion_tokens"]);
  CHECK(json::parse(events[events.size() - 3])["choices"][0]["finish_reason"].is_string());

  auto completion =
      post(c, "/v1/completions",
           {{"model", "micro"}, {"prompt", long_prompt()}, {"max_tokens", 8}, {"temperature", 0}});
  const json cj = json::parse(completion->body);
  CHECK(cj["choices"][0]["text"] == oracle_raw(long_prompt(), 8));
  CHECK(cj["choices"][0]["finish_reason"] == "length");
}

TEST_CASE("http: OpenAI errors are error objects naming the field", "[http]") {
  auto s = http_served::start();
  auto c = s.client();
  auto error_of = [&](json body) {
    auto r = post(c, "/v1/chat/completions", body);
    const json e = json::parse(r->body)["error"];
    return std::tuple(r->status, e["type"].get<std::string>(), e["param"], e["message"].get<std::string>());
  };
  json b = openai_body(false, 4);
  b["n"] = 2;
  auto [status, type, param, message] = error_of(b);
  CHECK(status == 400);
  CHECK(type == "invalid_request_error");
  CHECK(param == "n");
  b = openai_body(false, 4);
  b["model"] = "gpt-4";
  CHECK(std::get<0>(error_of(b)) == 404);
  b = openai_body(false, 4);
  b["tools"] = json::array({{{"type", "function"}}});
  CHECK(std::get<2>(error_of(b)) == "tools[0].function");
  b = openai_body(false, 4);
  b["tool_choice"] = "required";  // a call cannot be forced
  CHECK(std::get<2>(error_of(b)) == "tool_choice");
  b = openai_body(false, 4);
  b["max_tokens"] = 1000;  // with the prompt, beyond the 512-position context
  const auto [too_long, t2, p2, m2] = error_of(b);
  CHECK(too_long == 400);
  CHECK_THAT(m2, Contains("context"));
  auto bad_json = c.Post("/v1/completions", "[1,", "application/json");
  CHECK(bad_json->status == 400);
  CHECK(json::parse(bad_json->body)["error"]["code"] == "bad_request");
}

TEST_CASE("http: keys map to tenants, a bad key is 401, a tenant over its quota is 429 with Retry-After",
          "[http]") {
  tenant_config voice{.name = "voice", .http_key_sha256 = http::sha256_hex("voice-secret")};
  voice.quota.tokens_per_minute = 400;
  engine_config cfg;
  cfg.tenants = {voice};
  auto s = http_served::start({.tenants = cfg.tenants}, cfg);
  auto c = s.client();
  const httplib::Headers good = {{"Authorization", "Bearer voice-secret"}};
  CHECK(post(c, "/v1/chat/completions", openai_body(false, 4))->status ==
        401);  // keys configured: no anonymous
  auto bad = post(c, "/v1/chat/completions", openai_body(false, 4), {{"Authorization", "Bearer guess"}});
  CHECK(bad->status == 401);
  CHECK(json::parse(bad->body)["error"]["type"] == "authentication_error");
  CHECK(c.Get("/api/tags", {{"Authorization", "Bearer guess"}})->status == 401);
  CHECK(post(c, "/v1/chat/completions", openai_body(false, 4), good)->status == 200);
  // 400 tokens a minute: a request that takes its prompt and 300 tokens passes once (the long
  // prompt's greedy completion never ends early, so nothing is refunded), then the bucket refuses.
  auto big = [&] {
    return post(c, "/api/generate",
                {{"model", "micro"},
                 {"prompt", long_prompt()},
                 {"raw", true},
                 {"stream", false},
                 {"options", {{"temperature", 0}, {"repeat_penalty", 1.0}, {"num_predict", 300}}}},
                good);
  };
  CHECK(big()->status == 200);
  auto refused = big();
  CHECK(refused->status == 429);
  CHECK(std::stoi(refused->get_header_value("Retry-After")) >= 1);
  CHECK_THAT(json::parse(refused->body)["error"].get<std::string>(), Contains("voice"));
  CHECK(http::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("http: a client that leaves mid-stream has its request cancelled and its KV blocks freed",
          "[http]") {
  auto s = http_served::start({}, {}, backend_script{.delay = 20ms});
  for (const char* path : {"/api/generate", "/v1/completions"}) {
    auto c = s.client();
    int chunks = 0;
    const json body = std::string(path) == "/api/generate" ? long_generation()
                                                           : json{{"model", "micro"},
                                                                  {"prompt", long_prompt()},
                                                                  {"max_tokens", 300},
                                                                  {"stream", true},
                                                                  {"temperature", 0}};
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      return ++chunks < 3;
    };  // then hang up
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c.send(req);
    CHECK(chunks == 3);
    // 300 tokens at 20 ms a step would take 6 s: the stream ended long before.
    CHECK(engine_idle(*s.eng));
    CHECK(std::chrono::steady_clock::now() - t0 < 4s);
  }
}

TEST_CASE("http: a body over the configured limit is refused with 413", "[http]") {
  auto s = http_served::start({.max_body_bytes = 4096});
  auto c = s.client();
  json b = openai_body(false, 4);
  b["messages"][0]["content"] = std::string(8192, 'a');
  auto r = post(c, "/v1/chat/completions", b);
  CHECK(r->status == 413);
  CHECK(json::parse(r->body)["error"]["type"] == "invalid_request_error");
  CHECK(post(c, "/v1/chat/completions", openai_body(false, 4))->status == 200);  // the server serves on
}

TEST_CASE("http: with a certificate the gateway speaks HTTPS only, and a bad certificate is refused at start",
          "[http]") {
  const scratch_dir dir("hearth_tls");
  const std::string cert = dir.path + "/tls.crt", key = dir.path + "/tls.key";
  // A self-signed certificate for the loopback address (OpenSSL's own command, as an operator makes one).
  const std::string make =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "
      "/CN=hearth -addext subjectAltName=IP:127.0.0.1 -keyout " +
      key + " -out " + cert + " 2>/dev/null";
  REQUIRE(std::system(make.c_str()) == 0);
  http::gateway_options opt;
  opt.tls_cert_file = cert;
  opt.tls_key_file = key;
  auto s = http_served::start(opt);
  CHECK(s.gw->url() == "https://" + s.gw->endpoint());
  httplib::SSLClient tls("127.0.0.1", s.gw->port());
  tls.set_ca_cert_path(cert.c_str());
  tls.enable_server_certificate_verification(true);
  tls.set_read_timeout(20, 0);
  auto health = tls.Get("/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  auto chat = tls.Post("/api/chat", chat_body(false, 4).dump(), "application/json");
  REQUIRE(chat);
  CHECK(json::parse(chat->body)["message"]["content"] == oracle_chat(turn, 4));
  auto plain = s.client().Get("/health");  // plain HTTP to the TLS port gets no HTTP answer
  CHECK_FALSE((plain && plain->status == 200));

  http::gateway_options bad = opt;
  bad.tls_key_file = cert;  // a certificate is no key
  auto e = scripted_engine(micro(), 1024, {}, {});
  bad.endpoint = "127.0.0.1:0";
  auto refused = http::gateway::start(*e, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Contains("cannot load the TLS certificate " + cert));
  bad.tls_key_file.clear();
  CHECK_THAT(http::gateway::start(*e, bad).error().message,
             Contains("TLS needs a certificate and a key file"));
}
