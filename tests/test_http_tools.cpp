// Tool calls over the HTTP gateway: the tools rendered into the model's prompt by its own
// template (Qwen 2.5's and Llama 3.1's, on micro models that carry them), and a scripted backend
// that answers with fixed tokens (generated models make no real calls), parsed back into
// Ollama's and OpenAI's tool_calls, streamed or whole.
#include <catch2/catch.hpp>

#include "http_fixture.hpp"
#include "model/chat_prompt.hpp"
#include "model/chat_tools.hpp"

using namespace hearth;
using namespace hearth::test;
using json = nlohmann::json;
using Catch::Matchers::Contains;

namespace {

const engine_model& micro_with(chat_format f) {
  static const auto qwen = engine_model::make(micro_tools_options(chat_format::qwen25));
  static const auto llama = engine_model::make(micro_tools_options(chat_format::llama31));
  return f == chat_format::qwen25 ? *qwen : *llama;
}

const json turn_on = {{"type", "function"},
                      {"function",
                       {{"name", "HassTurnOn"},
                        {"description", "Turns on a device"},
                        {"parameters",
                         {{"type", "object"},
                          {"properties", {{"name", {{"type", "string"}}}, {"area", {{"type", "string"}}}}},
                          {"required", {"name"}}}}}}};

const std::string qwen_call =
    "<tool_call>\n{\"name\": \"HassTurnOn\", \"arguments\": {\"name\": \"kitchen light\"}}\n</tool_call>";
const std::string llama_call = "{\"name\": \"HassTurnOn\", \"parameters\": {\"name\": \"kitchen light\"}}";

json ollama_chat(json messages, bool stream) {
  return {{"model", micro_name}, {"messages", std::move(messages)}, {"tools", {turn_on}}, {"stream", stream}};
}

json openai_chat(json messages, bool stream) {
  return {{"model", micro_name}, {"messages", std::move(messages)}, {"tools", {turn_on}}, {"stream", stream}};
}

const json ask = json::array({{{"role", "user"}, {"content", "Turn on the kitchen light"}}});

// The prompt the server must have run: the same turns and tools through the model's template.
size_t prompt_tokens(const engine_model& m, const std::vector<chat_message>& turns) {
  const std::vector<std::string> tools = {turn_on.dump()};
  return encode_chat(*m.tok, turns, tools).value().size();
}

}  // namespace

TEST_CASE("http tools: Ollama's chat renders the tools and returns the model's call, whole or streamed",
          "[http][tools]") {
  const engine_model& m = micro_with(chat_format::qwen25);
  auto s = http_served::start({}, {}, answering(*m.tok, qwen_call), m);
  auto c = s.client();

  const json whole = json::parse(post(c, "/api/chat", ollama_chat(ask, false))->body);
  CHECK(whole["message"]["content"] == "");
  REQUIRE(whole["message"]["tool_calls"].size() == 1);
  CHECK(whole["message"]["tool_calls"][0]["function"]["name"] == "HassTurnOn");
  CHECK(whole["message"]["tool_calls"][0]["function"]["arguments"] == json{{"name", "kitchen light"}});
  CHECK(whole["prompt_eval_count"] == prompt_tokens(m, {{"user", "Turn on the kitchen light"}}));
  CHECK(whole["done_reason"] == "stop");

  auto r = post(c, "/api/chat", ollama_chat(ask, true));
  const auto lines = ndjson(r->body);
  size_t calls = 0;
  for (const json& line : lines) {
    CHECK_THAT(line["message"]["content"].get<std::string>(), !Contains("tool_call"));
    if (line["message"].contains("tool_calls")) {
      ++calls;
      CHECK(line["message"]["tool_calls"][0]["function"]["arguments"]["name"] == "kitchen light");
      CHECK(line["done"] == false);
    }
  }
  CHECK(calls == 1);
  CHECK(lines.back()["done"] == true);
  CHECK(lines.back()["eval_count"] == whole["eval_count"]);
}

TEST_CASE(
    "http tools: OpenAI's chat returns the call with an id, finish_reason tool_calls, whole or streamed",
    "[http][tools]") {
  const engine_model& m = micro_with(chat_format::llama31);
  auto s = http_served::start({}, {}, answering(*m.tok, llama_call), m);
  auto c = s.client();

  const json whole = json::parse(post(c, "/v1/chat/completions", openai_chat(ask, false))->body);
  const json& choice = whole["choices"][0];
  CHECK(choice["finish_reason"] == "tool_calls");
  CHECK(choice["message"]["content"].is_null());
  REQUIRE(choice["message"]["tool_calls"].size() == 1);
  const json& call = choice["message"]["tool_calls"][0];
  CHECK(call["type"] == "function");
  CHECK(call["id"].get<std::string>().starts_with("call_"));
  CHECK(call["function"]["name"] == "HassTurnOn");
  CHECK(json::parse(call["function"]["arguments"].get<std::string>()) == json{{"name", "kitchen light"}});
  CHECK(whole["usage"]["prompt_tokens"] == prompt_tokens(m, {{"user", "Turn on the kitchen light"}}));

  json deltas = json::array();
  std::string finish;
  for (const std::string& data : sse_data(post(c, "/v1/chat/completions", openai_chat(ask, true))->body)) {
    if (data == "[DONE]") break;
    const json chunk = json::parse(data)["choices"][0];
    CHECK_THAT(chunk["delta"].value("content", ""), !Contains("HassTurnOn"));  // held back, never text
    if (chunk["delta"].contains("tool_calls"))
      for (const json& d : chunk["delta"]["tool_calls"]) deltas.push_back(d);
    if (!chunk["finish_reason"].is_null()) finish = chunk["finish_reason"];
  }
  REQUIRE(deltas.size() == 1);
  CHECK(deltas[0]["index"] == 0);
  CHECK(deltas[0]["function"]["name"] == "HassTurnOn");
  CHECK(deltas[0]["function"]["arguments"] == call["function"]["arguments"]);
  CHECK(finish == "tool_calls");
}

TEST_CASE("http tools: a call's result goes back into the prompt and the answer is text", "[http][tools]") {
  for (const chat_format f : {chat_format::qwen25, chat_format::llama31}) {
    CAPTURE(to_string(f));
    const engine_model& m = micro_with(f);
    auto s = http_served::start({}, {}, answering(*m.tok, "The kitchen light is on."), m);
    auto c = s.client();
    const std::vector<chat_message> turns = {
        {"user", "Turn on the kitchen light"},
        {"assistant", "", {{"HassTurnOn", R"({"name": "kitchen light"})"}}},
        {"tool", "{\"success\": true}"}};
    // Ollama sends the arguments back as an object, OpenAI as text.
    const json ollama_turns = {
        ask[0],
        {{"role", "assistant"},
         {"content", ""},
         {"tool_calls",
          {{{"function", {{"name", "HassTurnOn"}, {"arguments", {{"name", "kitchen light"}}}}}}}}},
        {{"role", "tool"}, {"content", "{\"success\": true}"}, {"tool_name", "HassTurnOn"}}};
    const json o = json::parse(post(c, "/api/chat", ollama_chat(ollama_turns, false))->body);
    CHECK(o["message"]["content"] == "The kitchen light is on.");
    CHECK_FALSE(o["message"].contains("tool_calls"));
    CHECK(o["prompt_eval_count"] == prompt_tokens(m, turns));

    const json openai_turns = {
        ask[0],
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls",
          {{{"id", "call_1"},
            {"type", "function"},
            {"function", {{"name", "HassTurnOn"}, {"arguments", R"({"name": "kitchen light"})"}}}}}}},
        {{"role", "tool"}, {"content", "{\"success\": true}"}, {"tool_call_id", "call_1"}}};
    std::string text;
    for (const std::string& data :
         sse_data(post(c, "/v1/chat/completions", openai_chat(openai_turns, true))->body)) {
      if (data == "[DONE]") break;
      const json chunk = json::parse(data)["choices"][0];
      text += chunk["delta"].value("content", "");
      if (!chunk["finish_reason"].is_null()) CHECK(chunk["finish_reason"] == "stop");
    }
    CHECK(text == "The kitchen light is on.");
  }
}

TEST_CASE("http tools: a model whose template has no tools refuses them, naming its template",
          "[http][tools]") {
  auto s = http_served::start();  // the micro model's Llama 3 template
  auto c = s.client();
  auto r = post(c, "/api/chat", ollama_chat(ask, false));
  CHECK(r->status == 400);
  CHECK_THAT(json::parse(r->body)["error"].get<std::string>(),
             Contains("chat template (llama3) has no tool calls") && !Contains("send 'prompt'"));
  auto o = post(c, "/v1/chat/completions", openai_chat(ask, false));
  CHECK(o->status == 400);
  CHECK(json::parse(o->body)["error"]["param"] == "messages");
  // OpenAI's tool_choice "none": the same request without the tools, served.
  json none = openai_chat(ask, false);
  none["tool_choice"] = "none";
  none["max_tokens"] = 2;
  CHECK(post(c, "/v1/chat/completions", none)->status == 200);
}
