#include <catch2/catch.hpp>

#include <random>

#include <nlohmann/json.hpp>

#include "model/chat_tools.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

#include "llama_cpp_tool_prompts.inc"

using ojson = nlohmann::ordered_json;

std::vector<chat_message> messages_of(const ojson& list) {
  std::vector<chat_message> out;
  for (const ojson& m : list) {
    chat_message turn{m["role"], m["content"]};
    if (m.contains("tool_calls"))
      for (const ojson& c : m["tool_calls"])
        turn.tool_calls.push_back({c["function"]["name"], c["function"]["arguments"].dump()});
    out.push_back(std::move(turn));
  }
  return out;
}

std::vector<std::string> tools_of(const ojson& c) {
  std::vector<std::string> out;
  if (c.contains("tools"))
    for (const ojson& t : c["tools"]) out.push_back(t.dump());
  return out;
}

// What a stream gives for `text` cut at `cuts`, put together.
assistant_reply streamed(chat_format f, std::string_view text, std::vector<size_t> cuts) {
  std::sort(cuts.begin(), cuts.end());
  tool_call_stream s(f);
  assistant_reply all;
  size_t from = 0;
  auto take = [&](assistant_reply&& r) {
    all.content += r.content;
    for (auto& c : r.calls) all.calls.push_back(std::move(c));
  };
  for (size_t cut : cuts) {
    take(s.push(text.substr(from, cut - from)));
    from = cut;
  }
  take(s.push(text.substr(from)));
  take(s.finish());
  return all;
}

bool same(const assistant_reply& a, const assistant_reply& b) {
  if (a.content != b.content || a.calls.size() != b.calls.size()) return false;
  for (size_t i = 0; i < a.calls.size(); ++i)
    if (a.calls[i].name != b.calls[i].name || a.calls[i].arguments != b.calls[i].arguments) return false;
  return true;
}

const std::string hermes_answers[] = {
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
    "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n"
    "{\"name\": \"b\", \"arguments\": {}}\n</tool_call>\n",
    "No call here, just a <tool and a < sign.",
    "<tool_call>\n{\"name\": \"broken\", \"arguments\": {\"x\": }\n</tool_call> and text after",
    "Text, then a call that the length limit cuts: <tool_call>\n{\"name\": \"late\", \"arguments\": {\"on\": "
    "true}}",
    "<tool_call>{\"name\": \"cut\", \"argu",
};

const std::string llama_answers[] = {
    "{\"name\": \"HassTurnOn\", \"parameters\": {\"name\": \"kitchen light\"}}",
    "  <|python_tag|>{\"type\": \"function\", \"name\": \"get_weather\", \"arguments\": {\"city\": "
    "\"Zürich\"}}",
    "{not a call} but text",
    "The light is on.",
    "<b>bold</b> text",
};

}  // namespace

TEST_CASE("tool prompts are the reference templates' as llama.cpp's Jinja engine renders them",
          "[chat_tools]") {
  for (const char* text : llama_cpp_tool_prompts) {
    const ojson c = ojson::parse(text);
    CAPTURE(c["name"].get<std::string>());
    const chat_format f = c["format"] == "qwen2.5" ? chat_format::qwen25 : chat_format::llama31;
    const auto msgs = messages_of(c["messages"]);
    const auto tools = tools_of(c);
    const auto got = format_tool_chat(f, default_chat_context(f), msgs, tools, true,
                                      f == chat_format::llama31 ? "<|begin_of_text|>" : "");
    if (c.contains("error")) {
      REQUIRE_FALSE(got.ok());
      CHECK(got.error().code == errc::invalid_argument);
      CHECK(got.error().message.find("the model's template") == 0);
    } else {
      REQUIRE(got.ok());
      CHECK(*got == c["prompt"].get<std::string>());
      if (tools.empty()) {  // and format_chat gives the same turns without tools
        CHECK(format_chat(f, msgs, true, f == chat_format::llama31 ? "<|begin_of_text|>" : "", "") == *got);
      }
    }
  }
}

TEST_CASE("the templates with tools are detected, and tools are refused by families without them",
          "[chat_tools]") {
  // Llama 3 without the ipython role and ChatML without Qwen's tool instructions keep their families.
  CHECK(detect_chat_format(chat_template_text(chat_format::llama3)) == chat_format::llama3);
  CHECK(detect_chat_format("<|im_start|>{{ '<tool_call>' }}") == chat_format::chatml);
  const std::vector<chat_message> msgs = {{"user", "hi"}};
  const std::vector<std::string> tools = {R"({"type": "function", "function": {"name": "f"}})"};
  for (const chat_format f :
       {chat_format::llama3, chat_format::chatml, chat_format::gemma, chat_format::plain}) {
    CAPTURE(to_string(f));
    const auto got = format_tool_chat(f, {}, msgs, tools, true, "");
    REQUIRE_FALSE(got.ok());
    CHECK(got.error().code == errc::invalid_argument);
    CHECK(got.error().message.find(std::string("chat template (") + to_string(f) + ") has no tool calls") !=
          std::string::npos);
  }
}

TEST_CASE("a tool prompt names what it cannot render", "[chat_tools]") {
  const std::vector<std::string> not_json = {"{\"type\": \"function\", "};
  auto bad_tools = format_tool_chat(chat_format::qwen25, {}, std::vector<chat_message>{{"user", "hi"}},
                                    not_json, true, "");
  REQUIRE_FALSE(bad_tools.ok());
  CHECK(bad_tools.error().message == "tools[0] is not JSON");
  const std::vector<chat_message> bad_args = {{"system", "s"}, {"assistant", "", {{"f", "[1, 2]"}}}};
  auto args = format_tool_chat(chat_format::llama31, default_chat_context(chat_format::llama31), bad_args, {},
                               true, "");
  REQUIRE_FALSE(args.ok());
  CHECK(args.error().message == "messages[1]: the arguments of tool call 'f' are not a JSON object");
}

TEST_CASE("tojson writes as Python's json.dumps, empty containers too", "[chat_tools]") {
  const std::vector<std::string> tools = {R"({"b": [], "a": {}, "c": [1, {"d": "é\n"}]})"};
  const std::vector<chat_message> msgs = {{"user", "hi"}};
  const auto qwen = format_tool_chat(chat_format::qwen25, {}, msgs, tools, false, "");
  REQUIRE(qwen.ok());
  CHECK(qwen->find("\n{\"b\": [], \"a\": {}, \"c\": [1, {\"d\": \"é\\n\"}]}\n</tools>") != std::string::npos);
  const auto llama = format_tool_chat(chat_format::llama31, {}, msgs, tools, false, "");
  REQUIRE(llama.ok());
  CHECK(llama->find(
            "{\n    \"b\": [],\n    \"a\": {},\n    \"c\": [\n        1,\n        {\n            \"d\": "
            "\"é\\n\"\n        }\n    ]\n}\n\nhi") != std::string::npos);
}

TEST_CASE("a template's context: Qwen 2.5's default system turn, and the day for a dated template",
          "[chat_tools]") {
  const std::time_t day = 1764547200;  // 2025-12-01T00:00:00Z
  const chat_context q = chat_context_of(chat_template_text(chat_format::qwen25), day);
  CHECK(q.default_system == "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  CHECK(chat_context_of(chat_template_text(chat_format::llama31), day).date == "26 Jul 2024");
  const chat_context dated = chat_context_of("{{ strftime_now(\"%d %b %Y\") }}", day);
  CHECK((dated.date == "01 Dec 2025" || dated.date == "30 Nov 2025"));  // local time
  CHECK(dated.default_system.empty());
}

TEST_CASE("calls are parsed out of Qwen 2.5 and Llama 3.1 answers", "[chat_tools]") {
  auto one = parse_tool_calls(chat_format::qwen25, hermes_answers[0]);
  CHECK(one.content.empty());
  REQUIRE(one.calls.size() == 1);
  CHECK(one.calls[0].name == "get_weather");
  CHECK(one.calls[0].arguments == R"({"city": "Paris"})");

  auto two = parse_tool_calls(chat_format::qwen25, hermes_answers[1]);
  CHECK(two.content == "Let me check.");
  REQUIRE(two.calls.size() == 2);
  CHECK(two.calls[1].name == "b");
  CHECK(two.calls[1].arguments == "{}");

  CHECK(parse_tool_calls(chat_format::qwen25, hermes_answers[2]).content == hermes_answers[2]);
  auto broken = parse_tool_calls(chat_format::qwen25, hermes_answers[3]);  // nothing lost: it stays text
  CHECK(broken.calls.empty());
  CHECK(broken.content == hermes_answers[3]);
  auto cut = parse_tool_calls(chat_format::qwen25, hermes_answers[4]);
  CHECK(cut.content == "Text, then a call that the length limit cuts:");
  REQUIRE(cut.calls.size() == 1);
  CHECK(cut.calls[0].arguments == R"({"on": true})");
  CHECK(parse_tool_calls(chat_format::qwen25, hermes_answers[5]).content == hermes_answers[5]);

  auto light = parse_tool_calls(chat_format::llama31, llama_answers[0]);
  CHECK(light.content.empty());
  REQUIRE(light.calls.size() == 1);
  CHECK(light.calls[0].name == "HassTurnOn");
  CHECK(light.calls[0].arguments == R"({"name": "kitchen light"})");
  auto tagged = parse_tool_calls(chat_format::llama31, llama_answers[1]);
  REQUIRE(tagged.calls.size() == 1);
  CHECK(tagged.calls[0].arguments == R"({"city": "Zürich"})");
  for (size_t i = 2; i < std::size(llama_answers); ++i) {
    auto text = parse_tool_calls(chat_format::llama31, llama_answers[i]);
    CHECK(text.calls.empty());
    CHECK(text.content == llama_answers[i]);
  }
  // A family without calls keeps every answer as text.
  CHECK(parse_tool_calls(chat_format::chatml, hermes_answers[0]).content == hermes_answers[0]);
}

TEST_CASE("a streamed answer, cut anywhere, splits as the whole answer does", "[chat_tools]") {
  const uint64_t seed = test::test_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 200; ++round) {
    const bool qwen = round % 2 == 0;
    const chat_format f = qwen ? chat_format::qwen25 : chat_format::llama31;
    const std::string& text = qwen ? hermes_answers[rng() % std::size(hermes_answers)]
                                   : llama_answers[rng() % std::size(llama_answers)];
    std::vector<size_t> cuts(rng() % 8);
    for (size_t& c : cuts) c = rng() % (text.size() + 1);
    CAPTURE(text, cuts);
    CHECK(same(streamed(f, text, cuts), parse_tool_calls(f, text)));
  }
  // Text streams as it comes when it cannot be a call; a possible call waits.
  tool_call_stream s(chat_format::qwen25);
  CHECK(s.push("Sure. <tool").content == "Sure.");
  CHECK(s.push("_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>").calls.size() == 1);
  tool_call_stream l(chat_format::llama31);
  CHECK(l.push(" {\"name\"").content.empty());
  tool_call_stream t(chat_format::llama31);
  CHECK(t.push("Hi").content == "Hi");
}
