#include "model/chat_tools.hpp"

#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

namespace hearth {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view qwen_default_system =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
constexpr std::string_view llama31_date = "26 Jul 2024";

constexpr std::string_view qwen_tools_head =
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view qwen_tools_tail =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call><|im_end|>\n";
constexpr std::string_view llama_tools_head =
    "Given the following functions, please respond with a JSON for a function call with its proper arguments "
    "that best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": "
    "dictionary of argument name and its value}.Do not use variables.\n\n";

constexpr std::string_view call_open = "<tool_call>", call_close = "</tool_call>";
constexpr std::string_view python_tag = "<|python_tag|>";
constexpr std::string_view space = " \t\n\r\v\f";

// Jinja's tojson as Hugging Face runs it (Python's json.dumps, ensure_ascii off): ", " and ": "
// between items, or with an indent "," and a new line per item; "[]" and "{}" when empty.
void dump_python(const ojson& j, int indent, int level, std::string& out) {
  const bool array = j.is_array();
  if (!array && !j.is_object()) {
    out += j.dump(-1, ' ', false, ojson::error_handler_t::replace);
    return;
  }
  if (j.empty()) {
    out += array ? "[]" : "{}";
    return;
  }
  const auto newline = [&](int at) {
    if (indent >= 0) out.append("\n").append(size_t(indent * at), ' ');
  };
  out += array ? '[' : '{';
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) out += indent >= 0 ? "," : ", ";
    first = false;
    newline(level + 1);
    if (!array) out += ojson(it.key()).dump(-1, ' ', false, ojson::error_handler_t::replace) + ": ";
    dump_python(it.value(), indent, level + 1, out);
  }
  newline(level);
  out += array ? ']' : '}';
}

std::string tojson(const ojson& j, int indent = -1) {
  std::string out;
  dump_python(j, indent, 0, out);
  return out;
}

result<ojson> parse_json(std::string_view text, const std::string& what) {
  ojson j = ojson::parse(text, nullptr, false);
  if (j.is_discarded()) return error{errc::invalid_argument, what + " is not JSON"};
  return j;
}

// A call's arguments as the template writes them: a JSON object.
result<std::string> arguments_json(const tool_call& c, size_t turn) {
  const std::string what =
      "messages[" + std::to_string(turn) + "]: the arguments of tool call '" + c.name + "'";
  auto j = parse_json(c.arguments.empty() ? "{}" : c.arguments, what);
  if (!j) return j.error();
  if (!j->is_object()) return error{errc::invalid_argument, what + " are not a JSON object"};
  return tojson(*j);
}

result<std::vector<ojson>> parse_tools(std::span<const std::string> tools) {
  std::vector<ojson> out;
  for (size_t i = 0; i < tools.size(); ++i) {
    auto j = parse_json(tools[i], "tools[" + std::to_string(i) + "]");
    if (!j) return j.error();
    out.push_back(std::move(*j));
  }
  return out;
}

// Qwen/Qwen2.5-7B-Instruct's template: the first system turn (or the default one) opens the
// prompt, with the tools after it; consecutive tool results share one user turn.
result<std::string> format_qwen25(const chat_context& ctx, std::span<const chat_message> messages,
                                  std::span<const ojson> tools, bool add_generation_prompt) {
  const bool own_system = !messages.empty() && messages[0].role == "system";
  const std::string_view system = own_system ? std::string_view(messages[0].content) : ctx.default_system;
  std::string out;
  if (!tools.empty()) {
    out.append("<|im_start|>system\n").append(system).append(qwen_tools_head);
    for (const ojson& t : tools) out.append("\n").append(tojson(t));
    out += qwen_tools_tail;
  } else if (own_system || !system.empty()) {
    out.append("<|im_start|>system\n").append(system).append("<|im_end|>\n");
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const chat_message& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i > 0) ||
        (m.role == "assistant" && m.tool_calls.empty())) {
      out.append("<|im_start|>").append(m.role).append("\n").append(m.content).append("<|im_end|>\n");
    } else if (m.role == "assistant") {
      out.append("<|im_start|>assistant");
      if (!m.content.empty()) out.append("\n").append(m.content);
      for (const tool_call& c : m.tool_calls) {
        auto args = arguments_json(c, i);
        if (!args) return args.error();
        out.append("\n<tool_call>\n{\"name\": \"").append(c.name).append("\", \"arguments\": ");
        out.append(*args).append("}\n</tool_call>");
      }
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out.append("\n<tool_response>\n").append(m.content).append("\n</tool_response>");
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

// meta-llama/Llama-3.1-8B-Instruct's template with its defaults (tools_in_user_message): the
// system turn always comes, dated; the tools open the first turn after it.
result<std::string> format_llama31(const chat_context& ctx, std::span<const chat_message> messages,
                                   std::span<const ojson> tools, bool add_generation_prompt,
                                   std::string_view bos) {
  std::string system;
  size_t skipped = 0;  // turns taken out of the loop below: error messages name turns as sent
  if (!messages.empty() && messages[0].role == "system") {
    system = strip(messages[0].content);
    messages = messages.subspan(1), ++skipped;
  }
  std::string out(bos);
  out += "<|start_header_id|>system<|end_header_id|>\n\n";
  if (!tools.empty()) out += "Environment: ipython\n";
  out.append("Cutting Knowledge Date: December 2023\nToday Date: ").append(ctx.date).append("\n\n");
  out.append(system).append("<|eot_id|>");
  if (!tools.empty()) {
    if (messages.empty())
      return error{errc::invalid_argument,
                   "the model's template puts the tools in the first user turn, and there is none"};
    out.append("<|start_header_id|>user<|end_header_id|>\n\n").append(llama_tools_head);
    for (const ojson& t : tools) out.append(tojson(t, 4)).append("\n\n");
    out.append(strip(messages[0].content)).append("<|eot_id|>");
    messages = messages.subspan(1), ++skipped;
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const chat_message& m = messages[i];
    if (m.role == "tool" || m.role == "ipython") {
      out.append("<|start_header_id|>ipython<|end_header_id|>\n\n").append(tojson(ojson(m.content)));
    } else if (!m.tool_calls.empty()) {
      if (m.tool_calls.size() != 1)
        return error{errc::invalid_argument,
                     "the model's template takes one tool call per assistant turn (messages[" +
                         std::to_string(skipped + i) + "] has " + std::to_string(m.tool_calls.size()) + ")"};
      auto args = arguments_json(m.tool_calls[0], skipped + i);
      if (!args) return args.error();
      out.append("<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"")
          .append(m.tool_calls[0].name);
      out.append("\", \"parameters\": ").append(*args).append("}");
    } else {
      out.append("<|start_header_id|>")
          .append(m.role)
          .append("<|end_header_id|>\n\n")
          .append(strip(m.content));
    }
    out += "<|eot_id|>";
  }
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// A call as the model writes one: {"name": ..., "arguments" | "parameters": {...}}, optionally
// typed {"type": "function", ...} (llama.cpp's parsers accept the same).
std::optional<tool_call> read_call(std::string_view text) {
  const ojson j = ojson::parse(strip(text), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
  if (j.contains("type") && j["type"] != "function") return std::nullopt;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  if (args == j.end() || !args->is_object()) return std::nullopt;
  return tool_call{name->get<std::string>(), tojson(*args)};
}

// How much of the end of `s` could be the start of `marker`.
size_t partial_suffix(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n)
    if (marker.starts_with(s.substr(s.size() - n))) return n;
  return 0;
}

void append(assistant_reply& to, assistant_reply&& from) {
  to.content += from.content;
  for (tool_call& c : from.calls) to.calls.push_back(std::move(c));
}

}  // namespace

std::string_view strip(std::string_view s) {
  const size_t first = s.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

bool has_tools(chat_format f) {
  return f == chat_format::llama31 || f == chat_format::qwen25;
}

chat_context default_chat_context(chat_format f) {
  return {f == chat_format::qwen25 ? std::string(qwen_default_system) : "", std::string(llama31_date)};
}

chat_context chat_context_of(std::string_view jinja, std::time_t now) {
  chat_context ctx{
      jinja.find(qwen_default_system) != std::string_view::npos ? std::string(qwen_default_system) : "",
      std::string(llama31_date)};
  if (jinja.find("strftime_now") != std::string_view::npos) {
    std::tm tm{};
    localtime_r(&now, &tm);
    char day[32];
    std::strftime(day, sizeof day, "%d %b %Y", &tm);
    ctx.date = day;
  }
  return ctx;
}

result<std::string> format_tool_chat(chat_format f, const chat_context& ctx,
                                     std::span<const chat_message> messages,
                                     std::span<const std::string> tools, bool add_generation_prompt,
                                     std::string_view bos) {
  if (!has_tools(f))
    return error{errc::invalid_argument,
                 std::string("the model's chat template (") + to_string(f) +
                     ") has no tool calls; Hearth renders tools for llama3.1 and qwen2.5 templates"};
  auto parsed = parse_tools(tools);
  if (!parsed) return parsed.error();
  if (f == chat_format::qwen25) return format_qwen25(ctx, messages, *parsed, add_generation_prompt);
  return format_llama31(ctx, messages, *parsed, add_generation_prompt, bos);
}

assistant_reply parse_tool_calls(chat_format f, std::string_view text) {
  tool_call_stream s(f);
  assistant_reply out = s.push(text);
  append(out, s.finish());
  return out;
}

assistant_reply tool_call_stream::push(std::string_view text) {
  pending_ += text;
  assistant_reply out;
  if (format_ == chat_format::qwen25)
    push_hermes(out);
  else if (format_ == chat_format::llama31)
    push_llama(out);
  else
    out.content = std::exchange(pending_, {});
  return out;
}

// Text until a <tool_call>; the whitespace before a block and after it is the template's, not
// the answer's. A tail that may be the start of a block (or whitespace before one) waits.
void tool_call_stream::push_hermes(assistant_reply& out) {
  for (;;) {
    if (in_call_) {
      const size_t close = pending_.find(call_close);
      if (close == std::string::npos) return;
      const std::string_view body = std::string_view(pending_).substr(0, close);
      auto call = read_call(body);
      if (!call) out.content.append(call_open).append(body).append(call_close);  // nothing lost: text
      after_call_ = call.has_value();
      if (call) out.calls.push_back(std::move(*call));
      pending_.erase(0, close + call_close.size());
      in_call_ = false;
      continue;
    }
    if (after_call_) {
      pending_.erase(0, std::min(pending_.size(), pending_.find_first_not_of(space)));
      if (pending_.empty()) return;
      after_call_ = false;
    }
    const size_t open = pending_.find(call_open);
    if (open != std::string::npos) {
      const size_t end = std::string_view(pending_).substr(0, open).find_last_not_of(space);
      out.content.append(pending_, 0, end == std::string::npos ? 0 : end + 1);
      pending_.erase(0, open + call_open.size());
      in_call_ = true;
      continue;
    }
    size_t keep = partial_suffix(pending_, call_open);
    const size_t text_end =
        std::string_view(pending_).substr(0, pending_.size() - keep).find_last_not_of(space);
    keep = pending_.size() - (text_end == std::string::npos ? 0 : text_end + 1);
    out.content.append(pending_, 0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return;
  }
}

// A Llama answer that opens with '{' (or <|python_tag|>) may be a call: it is held to the end.
void tool_call_stream::push_llama(assistant_reply& out) {
  if (lead_ == lead::undecided) {
    const std::string_view s = strip(pending_);
    if (s.empty() || (s.size() < python_tag.size() && python_tag.starts_with(s))) return;
    lead_ = s.front() == '{' || s.starts_with(python_tag) ? lead::call : lead::text;
  }
  if (lead_ == lead::text) out.content += std::exchange(pending_, {});
}

assistant_reply tool_call_stream::finish() {
  assistant_reply out;
  std::string rest = std::exchange(pending_, {});
  if (format_ == chat_format::qwen25 && in_call_) {
    // An answer that ends inside a block (a stop string, the length limit) keeps it if it parses.
    if (auto call = read_call(rest))
      out.calls.push_back(std::move(*call));
    else
      out.content.append(call_open).append(rest);
  } else if (format_ == chat_format::llama31 && lead_ == lead::call) {
    std::string_view body = strip(rest);
    if (body.starts_with(python_tag)) body.remove_prefix(python_tag.size());
    if (auto call = read_call(body))
      out.calls.push_back(std::move(*call));
    else
      out.content = std::move(rest);
  } else if (!(format_ == chat_format::qwen25 && after_call_)) {
    out.content = std::move(rest);
  }
  in_call_ = after_call_ = false;
  lead_ = lead::undecided;
  return out;
}

}  // namespace hearth
