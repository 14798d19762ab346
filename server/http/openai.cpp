// Inside this file a bad field throws wire::refusal; read_request (api.hpp) is the edge.
#include "server/http/openai.hpp"

#include <chrono>

#include <nlohmann/json.hpp>

namespace hearth::http {

namespace {

using json = nlohmann::json;
using wire::fields;

constexpr uint32_t default_completion_tokens = 16;  // OpenAI's legacy completions default

// The fields both endpoints read (read_sampling), and the model and logprobs they check.
constexpr std::string_view sampling_fields[] = {"model",
                                                "max_tokens",
                                                "temperature",
                                                "top_p",
                                                "top_k",
                                                "min_p",
                                                "repetition_penalty",
                                                "seed",
                                                "n",
                                                "stop",
                                                "stream",
                                                "stream_options",
                                                "user",
                                                "frequency_penalty",
                                                "presence_penalty",
                                                "logit_bias",
                                                "logprobs",
                                                "ignore_eos"};

// Fields that must keep their neutral value: the sampler has no frequency or presence penalty,
// and nothing here returns log-probabilities.
void refuse_unless(const fields& f, std::string_view field, const json& neutral, const std::string& why) {
  if (f.has(field) && !f.get(field).is_null() && f.get(field) != neutral) f.fail(field, why);
}

// The fields both endpoints share.
void read_sampling(const fields& f, api_request& r, const api_limits& lim, uint32_t default_max) {
  auto& s = r.g.sampling;
  s.temperature = static_cast<float>(f.number("temperature", 0, 2, false, 1.0));
  s.top_p = static_cast<float>(f.number("top_p", 0, 1, true, 1.0));
  s.top_k = static_cast<uint32_t>(f.integer("top_k", 0, lim.n_vocab, 0));
  s.min_p = static_cast<float>(f.number("min_p", 0, 1, false, 0.0));
  s.repetition_penalty = static_cast<float>(f.number("repetition_penalty", 0, 10, true, 1.0));
  r.random_seed = !f.has("seed") || f.get("seed").is_null();
  if (!r.random_seed) s.seed = static_cast<uint64_t>(f.integer("seed", 0, wire::max_seed, 0));
  if (f.has("n") && f.get("n") != 1) f.fail("n", "must be 1 (one choice per request)");
  refuse_unless(f, "frequency_penalty", 0, "is not supported (must be 0)");
  refuse_unless(f, "presence_penalty", 0, "is not supported (must be 0)");
  refuse_unless(f, "logit_bias", json::object(), "is not supported");
  // max_completion_tokens is the newer name of max_tokens; given both, it wins.
  const char* limit = f.has("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  r.g.max_tokens = f.has(limit) && !f.get(limit).is_null()
                       ? static_cast<uint32_t>(f.integer(limit, 1, 65536, 0))
                       : default_max;
  r.g.stop = wire::read_stops(f, "stop", true);
  r.g.stream = f.flag("stream", false);
  r.g.ignore_eos = f.flag("ignore_eos", false);  // vLLM's extension: benchmarks run to max_tokens
  if (f.has("stream_options") && !f.get("stream_options").is_null()) {
    if (!f.get("stream_options").is_object()) f.fail("stream_options", "must be an object");
    const fields o(f.get("stream_options"), "stream_options.");
    o.only({"include_usage"});
    r.include_usage = o.flag("include_usage", false);
  }
}

// A message's content: a string, null, or text parts ([{"type": "text", "text": ...}]).
std::string read_content(const fields& m) {
  if (!m.has("content") || m.get("content").is_null()) return "";
  const json& c = m.get("content");
  if (c.is_string()) return c.get<std::string>();
  const json& parts = m.array("content", 0, max_messages);
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string at = "content[" + std::to_string(i) + "]";
    if (!parts[i].is_object()) m.fail(at, "must be an object {type, text}");
    const fields p(parts[i], m.name(at) + ".");
    p.only({"type", "text"});
    if (p.text("type", 1, 32) != "text") p.fail("type", "must be \"text\": the served model reads text only");
    text += p.text("text", 0, std::string::npos);
  }
  return text;
}

// An assistant turn's calls as OpenAI sends them back: [{"id", "type": "function", "function":
// {"name", "arguments": "<a JSON object, as text>"}}].
std::vector<tool_call> read_calls(const fields& t) {
  const json& list = t.array("tool_calls", 0, max_calls);
  std::vector<tool_call> out;
  for (size_t j = 0; j < list.size(); ++j) {
    const std::string at = t.name("tool_calls[" + std::to_string(j) + "]");
    if (!list[j].is_object())
      throw wire::refusal{"field '" + at + "' must be an object {id, type, function}"};
    const fields c(list[j], at + ".");
    c.only({"id", "type", "function"});
    if (c.has("type") && c.get("type") != "function") c.fail("type", "must be \"function\"");
    if (!c.get("function").is_object()) c.fail("function", "must be an object {name, arguments}");
    const fields fn(c.get("function"), at + ".function.");
    fn.only({"name", "arguments"});
    std::string name = read_call_name(fn);
    std::string args = fn.has("arguments") ? fn.text("arguments", 0, std::string::npos) : "{}";
    if (!json::parse(args, nullptr, false).is_object())
      fn.fail("arguments", "must be a JSON object, as text");
    out.push_back({std::move(name), std::move(args)});
  }
  return out;
}

chat_message read_turn(const json& m, size_t i) {
  const std::string at = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) throw wire::refusal{"field '" + at + "' must be an object {role, content}"};
  const fields t(m, at + ".");
  t.only({"role", "content", "name", "tool_calls", "tool_call_id", "refusal"});
  std::string role = t.text("role", 1, 16);
  if (role == "developer") role = "system";  // OpenAI's newer name for the system turn
  if (role != "system" && role != "user" && role != "assistant" && role != "tool")
    t.fail("role",
           "must be \"system\", \"developer\", \"user\", \"assistant\" or \"tool\" (got \"" + role + "\")");
  chat_message turn{std::move(role), read_content(t)};
  if (t.has("tool_calls") && !t.get("tool_calls").is_null()) {
    if (turn.role != "assistant") t.fail("tool_calls", "belongs to an assistant turn");
    turn.tool_calls = read_calls(t);
  }
  return turn;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char* error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 429:
      return "rate_limit_error";
    case 400:
    case 404:
    case 413:
    case 414:
    case 415:
      return "invalid_request_error";
    default:
      return "server_error";
  }
}

std::string sse(const json& j) {
  return "data: " + dump(j) + "\n\n";
}

class openai_reply final : public reply_format {
 public:
  openai_reply(bool chat, std::string model, std::string id, bool include_usage)
      : chat_(chat), model_(std::move(model)), id_(std::move(id)), include_usage_(include_usage) {}
  const char* stream_type() const override { return "text/event-stream"; }
  std::string start() override {
    return chat_ ? sse(chunk({{"role", "assistant"}, {"content", ""}}, nullptr)) : "";
  }
  std::string token(std::string_view text) override { return sse(chunk({{"content", text}}, nullptr, text)); }
  // Each call whole in one delta (its index, id, name and all its arguments): clients add up
  // the deltas of an index, and one delta is a sum too.
  std::string calls(std::span<const tool_call> calls) override {
    const size_t first = n_calls_;
    return sse(chunk({{"tool_calls", tool_calls_json(calls, first, true)}}, nullptr));
  }
  std::string end(const request_event& e) override {
    std::string out = sse(chunk(json::object(), finish(e), ""));
    if (include_usage_) {
      json last = head(chat_ ? "chat.completion.chunk" : "text_completion");
      last["choices"] = json::array();
      last["usage"] = usage(e);
      last["timings"] = wire::encode_timings(e.time);  // an extension, as llama.cpp's server sends
      out += sse(last);
    }
    return out + "data: [DONE]\n\n";
  }
  std::string failed(const api_error& e) override { return "data: " + error_body(e) + "\n\n"; }
  std::string whole(const assistant_reply& reply, const request_event& e) override {
    json j = head(chat_ ? "chat.completion" : "text_completion");
    json choice = {{"index", 0}, {"logprobs", nullptr}};
    if (chat_) {
      choice["message"] = {{"role", "assistant"}, {"content", reply.content}};
      if (!reply.calls.empty()) {
        choice["message"]["tool_calls"] = tool_calls_json(reply.calls, 0, false);
        if (reply.content.empty()) choice["message"]["content"] = nullptr;  // as OpenAI answers a call
      }
    } else {
      choice["text"] = reply.content;
    }
    choice["finish_reason"] = finish(e);
    j["choices"] = json::array({choice});
    j["usage"] = usage(e);
    j["timings"] = wire::encode_timings(e.time);
    return dump(j);
  }
  std::string error_body(const api_error& e) const override { return openai_error(e); }

 private:
  json head(const char* object) const {
    return {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_}};
  }
  // One streamed chunk: a chat delta, or a completion's text.
  json chunk(json delta, json finish_reason, std::string_view text = "") const {
    json j = head(chat_ ? "chat.completion.chunk" : "text_completion");
    json choice = {{"index", 0}, {"finish_reason", std::move(finish_reason)}, {"logprobs", nullptr}};
    if (chat_)
      choice["delta"] = std::move(delta);
    else
      choice["text"] = text;
    j["choices"] = json::array({choice});
    if (include_usage_) j["usage"] = nullptr;  // every chunk but the last, as OpenAI sends them
    return j;
  }
  // Calls numbered from `first`, ids unique in the request; a stream's deltas carry their index.
  json tool_calls_json(std::span<const tool_call> calls, size_t first, bool indexed) {
    json list = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
      json c = {{"id", "call_" + id_ + "_" + std::to_string(first + i)},
                {"type", "function"},
                {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
      if (indexed) c["index"] = first + i;
      list.push_back(std::move(c));
    }
    n_calls_ = first + calls.size();
    return list;
  }
  const char* finish(const request_event& e) const {
    if (e.finish == finish_reason::length) return "length";
    return n_calls_ > 0 ? "tool_calls" : "stop";
  }
  static json usage(const request_event& e) {
    return {{"prompt_tokens", e.use.prompt_tokens},
            {"completion_tokens", e.use.completion_tokens},
            {"total_tokens", e.use.prompt_tokens + e.use.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", e.use.cached_tokens}}}};
  }

  bool chat_;
  std::string model_, id_;
  bool include_usage_;
  int64_t created_ = unix_now();
  size_t n_calls_ = 0;  // calls written so far
};

}  // namespace

result<api_request, api_error> parse_openai_chat(std::string_view body, const api_limits& lim) {
  return read_request(body, lim, [&](const fields& f, const nlohmann::ordered_json& ordered) {
    static constexpr std::string_view own[] = {
        "messages", "max_completion_tokens", "top_logprobs",       "response_format",
        "tools",    "tool_choice",           "parallel_tool_calls"};
    f.only(sampling_fields, own);
    refuse_unless(f, "logprobs", false, "is not supported");
    refuse_unless(f, "top_logprobs", 0, "is not supported");
    refuse_unless(f, "response_format", json{{"type", "text"}},
                  "is not supported: only {\"type\": \"text\"}");
    api_request r;
    read_sampling(f, r, lim, 0);  // no max_tokens: as long as the context allows
    r.g.tools = read_tools(f, ordered);
    // The model decides whether to call ("auto"), or is shown no tools ("none", as llama.cpp
    // does); forcing a call would need constrained decoding.
    const json& choice = f.has("tool_choice") ? f.get("tool_choice") : json("auto");
    if (choice == "none")
      r.g.tools.clear();
    else if (!choice.is_null() && choice != "auto")
      f.fail("tool_choice", "is not supported: only \"auto\" or \"none\" (no call can be forced)");
    if (f.has("parallel_tool_calls") && !f.get("parallel_tool_calls").is_boolean())
      f.fail("parallel_tool_calls", "must be true or false");
    const json& list = f.array("messages", 1, max_messages);
    for (size_t i = 0; i < list.size(); ++i) r.g.messages.push_back(read_turn(list[i], i));
    return r;
  });
}

result<api_request, api_error> parse_openai_completion(std::string_view body, const api_limits& lim) {
  return read_request(body, lim, [&](const fields& f, const nlohmann::ordered_json&) {
    static constexpr std::string_view own[] = {"prompt", "echo", "suffix", "best_of"};
    f.only(sampling_fields, own);
    refuse_unless(f, "echo", false, "is not supported");
    refuse_unless(f, "suffix", "", "is not supported (no fill-in-the-middle)");
    refuse_unless(f, "logprobs", 0, "is not supported");
    refuse_unless(f, "best_of", 1, "must be 1");
    api_request r;
    read_sampling(f, r, lim, default_completion_tokens);
    const json& p = f.get("prompt");
    if (p.is_array()) {
      const json& list = f.array("prompt", 1, 1);
      if (!list[0].is_string()) f.fail("prompt[0]", "must be a string (token arrays are not supported)");
      r.g.prompt = list[0].get<std::string>();
    } else {
      r.g.prompt = f.text("prompt", 0, std::string::npos);
    }
    return r;
  });
}

std::unique_ptr<reply_format> openai_format(bool chat, std::string model, std::string id,
                                            bool include_usage) {
  return std::make_unique<openai_reply>(chat, std::move(model), std::move(id), include_usage);
}

std::string openai_error(const api_error& e) {
  return dump({{"error",
                {{"message", e.err.message},
                 {"type", error_type(e.status)},
                 {"param", e.param.empty() ? json(nullptr) : json(e.param)},
                 {"code", e.err.code}}}});
}

std::string openai_models(const server::model_card& m) {
  const json model = {{"id", m.name}, {"object", "model"}, {"created", 0}, {"owned_by", "hearth"}};
  return dump({{"object", "list"}, {"data", json::array({model})}});
}

}  // namespace hearth::http
