// Inside this file a bad field throws wire::refusal; read_request (api.hpp) is the edge.
#include "server/http/ollama.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <limits>

#include <nlohmann/json.hpp>

namespace hearth::http {

namespace {

using json = nlohmann::json;
using wire::fields;

// Runtime options that change where and how fast Ollama computes, never what it samples:
// accepted and ignored, so a client's tuning for its own machine does not fail here.
constexpr std::string_view ignored_options[] = {"num_thread", "num_gpu",  "num_batch", "main_gpu", "use_mmap",
                                                "use_mlock",  "low_vram", "numa",      "num_keep"};

// Ollama's defaults when an option is missing (its docs/modelfile.md), so a client sees the
// sampling it would get from Ollama.
constexpr double default_temperature = 0.8, default_top_p = 0.9, default_repeat_penalty = 1.1;
constexpr int64_t default_top_k = 40;

void read_options(const json& o, api_request& r, const api_limits& lim) {
  if (!o.is_object()) throw wire::refusal{"field 'options' must be an object"};
  const fields f(o, "options.");
  static constexpr std::string_view known[] = {"temperature",    "top_k",         "top_p", "min_p",
                                               "repeat_penalty", "repeat_last_n", "seed",  "num_predict",
                                               "stop",           "num_ctx"};
  f.only(known, ignored_options, "an option this server supports");
  auto& s = r.g.sampling;
  s.temperature = static_cast<float>(f.number("temperature", 0, 100, false, default_temperature));
  s.top_k = static_cast<uint32_t>(
      f.integer("top_k", 0, lim.n_vocab, std::min<int64_t>(default_top_k, lim.n_vocab)));
  s.top_p = static_cast<float>(f.number("top_p", 0, 1, true, default_top_p));
  s.min_p = static_cast<float>(f.number("min_p", 0, 1, false, 0.0));
  s.repetition_penalty = static_cast<float>(f.number("repeat_penalty", 0, 10, true, default_repeat_penalty));
  s.repeat_last_n = static_cast<uint32_t>(f.integer("repeat_last_n", 0, 65536, 64));
  const int64_t seed = f.integer("seed", -1, wire::max_seed, -1);  // -1: Ollama's "random"
  r.random_seed = seed < 0;
  s.seed = seed < 0 ? 0 : static_cast<uint64_t>(seed);
  // -1 (as long as it goes) and -2 (fill the context) both run to the end of the context.
  const int64_t n = f.integer("num_predict", -2, 65536, -1);
  if (n == 0) f.fail("num_predict", "must be -1, -2 or from 1 to 65536 (got 0)");
  r.g.max_tokens = n < 0 ? 0 : static_cast<uint32_t>(n);
  r.g.stop = wire::read_stops(f, "stop", false);
  const int64_t n_ctx = f.integer("num_ctx", 1, std::numeric_limits<int64_t>::max(), lim.n_ctx);
  if (n_ctx > lim.n_ctx)
    f.fail("num_ctx", "must be at most the model's context, " + std::to_string(lim.n_ctx) +
                          " positions (got " + std::to_string(n_ctx) + ")");
}

// The fields both routes share: stream, keep_alive, format, options.
void read_common(const fields& f, api_request& r, const api_limits& lim) {
  r.g.stream = f.flag("stream", true);
  if (f.has("keep_alive") && !f.get("keep_alive").is_number() && !f.get("keep_alive").is_string())
    f.fail("keep_alive", "must be a duration (a number of seconds or a string such as \"5m\")");
  if (f.has("format") && !(f.get("format").is_string() && f.get("format").get<std::string>().empty()))
    f.fail("format", "is not supported: this server does not constrain output to JSON or a schema");
  if (f.has("think") && f.flag("think", false)) f.fail("think", "is not supported");
  read_options(f.has("options") ? f.get("options") : json::object(), r, lim);
}

void refuse_nonempty(const fields& f, std::string_view field, const std::string& why) {
  if (!f.has(field)) return;
  const json& v = f.get(field);
  if (!v.is_null() && !(v.is_array() && v.empty()) && !(v.is_string() && v.get<std::string>().empty()))
    f.fail(field, why);
}

// An assistant turn's calls as Ollama sends them back: [{"function": {"name", "arguments": {...}}}].
std::vector<tool_call> read_calls(const fields& t, size_t i, const nlohmann::ordered_json& ordered) {
  const json& list = t.array("tool_calls", 0, max_calls);
  std::vector<tool_call> out;
  for (size_t j = 0; j < list.size(); ++j) {
    const std::string at = t.name("tool_calls[" + std::to_string(j) + "]");
    if (!list[j].is_object() || !list[j].contains("function") || !list[j]["function"].is_object())
      throw wire::refusal{"field '" + at + "' must be an object {function: {name, arguments}}"};
    const fields fn(list[j]["function"], at + ".function.");
    fn.only({"name", "arguments", "index"});
    std::string name = read_call_name(fn);
    if (fn.has("arguments") && !fn.get("arguments").is_object()) fn.fail("arguments", "must be an object");
    const auto& args = ordered_at(ordered, {"messages", i, "tool_calls", j, "function", "arguments"});
    const json& given = fn.has("arguments") ? fn.get("arguments") : json::object();
    out.push_back({std::move(name), args.is_object() ? args.dump() : given.dump()});
  }
  return out;
}

chat_message read_turn(const json& m, size_t i, const nlohmann::ordered_json& ordered) {
  const std::string at = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) throw wire::refusal{"field '" + at + "' must be an object {role, content}"};
  const fields t(m, at + ".");
  t.only({"role", "content", "images", "tool_calls", "thinking", "tool_name"});
  refuse_nonempty(t, "images", "is not supported: the served model reads text only");
  chat_message turn{t.text("role", 1, 16), t.has("content") ? t.text("content", 0, std::string::npos) : ""};
  if (turn.role != "system" && turn.role != "user" && turn.role != "assistant" && turn.role != "tool")
    t.fail("role", "must be \"system\", \"user\", \"assistant\" or \"tool\" (got \"" + turn.role + "\")");
  if (t.has("tool_calls") && !t.get("tool_calls").is_null()) {
    if (turn.role != "assistant") t.fail("tool_calls", "belongs to an assistant turn");
    turn.tool_calls = read_calls(t, i, ordered);
  }
  return turn;
}

std::string now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[40];
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + n, sizeof text - n, ".%06lldZ", static_cast<long long>(us));
  return text;
}

int64_t ns(double ms) {
  return static_cast<int64_t>(ms * 1e6);
}

json details(const server::model_card& m) {
  return {{"format", "gguf"},     {"family", m.architecture}, {"families", json::array({m.architecture})},
          {"parameter_size", ""}, {"quantization_level", ""}, {"parent_model", ""}};
}

class ollama_reply final : public reply_format {
 public:
  ollama_reply(bool chat, std::string model) : chat_(chat), model_(std::move(model)) {}
  const char* stream_type() const override { return "application/x-ndjson"; }
  std::string token(std::string_view text) override { return dump(line(text, false)) + "\n"; }
  std::string calls(std::span<const tool_call> calls) override {
    json j = line("", false);
    j["message"]["tool_calls"] = tool_calls_json(calls);
    return dump(j) + "\n";
  }
  std::string end(const request_event& e) override { return dump(last(e, {})) + "\n"; }
  std::string failed(const api_error& e) override { return error_body(e) + "\n"; }
  std::string whole(const assistant_reply& reply, const request_event& e) override {
    return dump(last(e, reply));
  }
  std::string error_body(const api_error& e) const override { return dump({{"error", e.err.message}}); }

 private:
  json line(std::string_view text, bool done) const {
    json j = {{"model", model_}, {"created_at", now_rfc3339()}};
    if (chat_)
      j["message"] = {{"role", "assistant"}, {"content", text}};
    else
      j["response"] = text;
    j["done"] = done;
    return j;
  }

  // Ollama's calls: the arguments an object, no ids.
  static json tool_calls_json(std::span<const tool_call> calls) {
    json list = json::array();
    for (const tool_call& c : calls)
      list.push_back({{"function", {{"name", c.name}, {"arguments", json::parse(c.arguments)}}}});
    return list;
  }

  // The last line: its text and calls (none when streamed), why it ended and Ollama's usage fields.
  json last(const request_event& e, const assistant_reply& reply) const {
    json j = line(reply.content, true);
    if (chat_ && !reply.calls.empty()) j["message"]["tool_calls"] = tool_calls_json(reply.calls);
    j["done_reason"] = e.kind != event_kind::done          ? "load"
                       : e.finish == finish_reason::length ? "length"
                                                           : "stop";
    if (e.kind != event_kind::done) return j;
    j["total_duration"] = ns(e.time.e2e_ms);
    j["load_duration"] = 0;  // the model is loaded when the server starts
    j["prompt_eval_count"] = e.use.prompt_tokens;
    j["prompt_eval_duration"] = ns(e.time.prefill_ms + e.time.first_step_ms);
    j["eval_count"] = e.use.completion_tokens;
    j["eval_duration"] = ns(e.time.e2e_ms - e.time.ttft_ms);
    return j;
  }

  bool chat_;
  std::string model_;
};

}  // namespace

result<api_request, api_error> parse_ollama_chat(std::string_view body, const api_limits& lim) {
  return read_request(body, lim, [&](const fields& f, const nlohmann::ordered_json& ordered) {
    f.only({"model", "messages", "options", "stream", "keep_alive", "format", "tools", "think"});
    api_request r;
    read_common(f, r, lim);
    r.g.tools = read_tools(f, ordered);
    const json& list = f.has("messages") ? f.array("messages", 0, max_messages) : json::array();
    for (size_t i = 0; i < list.size(); ++i) r.g.messages.push_back(read_turn(list[i], i, ordered));
    r.load_only = r.g.messages.empty();  // Ollama's way to load a model: no messages
    return r;
  });
}

result<api_request, api_error> parse_ollama_generate(std::string_view body, const api_limits& lim) {
  return read_request(body, lim, [&](const fields& f, const nlohmann::ordered_json&) {
    f.only({"model", "prompt", "system", "raw", "options", "stream", "keep_alive", "format", "images",
            "suffix", "template", "context", "think"});
    refuse_nonempty(f, "images", "is not supported: the served model reads text only");
    refuse_nonempty(f, "suffix", "is not supported (no fill-in-the-middle)");
    refuse_nonempty(f, "template", "is not supported: the model's own chat template is used");
    refuse_nonempty(f, "context", "is not supported: send the conversation to /api/chat");
    api_request r;
    read_common(f, r, lim);
    const std::string prompt = f.has("prompt") ? f.text("prompt", 0, std::string::npos) : "";
    r.load_only = prompt.empty();  // Ollama's way to load a model: no prompt
    if (f.flag("raw", false)) {
      if (f.has("system")) f.fail("system", "cannot be given with raw: a raw prompt is not templated");
      r.g.prompt = prompt;
      return r;
    }
    if (f.has("system")) r.g.messages.push_back({"system", f.text("system", 0, std::string::npos)});
    r.g.messages.push_back({"user", prompt});
    return r;
  });
}

std::unique_ptr<reply_format> ollama_format(bool chat, std::string model) {
  return std::make_unique<ollama_reply>(chat, std::move(model));
}

std::string ollama_tags(const server::model_card& m) {
  const json model = {{"name", m.name + ":latest"},
                      {"model", m.name + ":latest"},
                      {"modified_at", now_rfc3339()},
                      {"size", 0},
                      {"digest", ""},
                      {"details", details(m)}};
  return dump({{"models", json::array({model})}});
}

std::string ollama_ps(const server::model_card& m) {
  const json model = {
      {"name", m.name + ":latest"}, {"model", m.name + ":latest"},          {"size", 0},     {"digest", ""},
      {"details", details(m)},      {"expires_at", "9999-12-31T23:59:59Z"}, {"size_vram", 0}};
  return dump({{"models", json::array({model})}});
}

result<std::string, api_error> ollama_show(std::string_view body, const server::model_card& m) {
  auto j = parse_body(body);
  if (!j) return j.error();
  // Older clients name the model in `name`.
  if (j->contains("name") && !j->contains("model")) (*j)["model"] = (*j)["name"];
  auto named = read_model(fields(*j), {m.name, m.n_vocab, m.n_ctx});
  if (!named) return named.error();
  const json info = {{"general.architecture", m.architecture},
                     {m.architecture + ".context_length", m.n_ctx},
                     {m.architecture + ".vocab_size", m.n_vocab}};
  return dump(
      {{"modelfile", ""},
       {"parameters", ""},
       {"template", m.chat_format},
       {"details", details(m)},
       {"model_info", info},
       {"capabilities", m.tools ? json::array({"completion", "tools"}) : json::array({"completion"})}});
}

}  // namespace hearth::http
