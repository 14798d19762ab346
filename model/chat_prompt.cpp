#include "model/chat_prompt.hpp"

#include <algorithm>

#include "model/chat_tools.hpp"

namespace hearth {

namespace {

bool uses_tools(std::span<const chat_message> messages, std::span<const std::string> tools) {
  return !tools.empty() || std::any_of(messages.begin(), messages.end(), [](const chat_message& m) {
    return m.role == "tool" || !m.tool_calls.empty();
  });
}

}  // namespace

result<std::vector<token_id>> encode_chat(const tokenizer& tok, std::span<const chat_message> messages,
                                          std::span<const std::string> tools) {
  const auto& spec = tok.spec();
  auto format = chat_format_of(spec.chat_template);
  if (!format) return format.error();
  auto piece = [&](token_id id) { return id == no_token ? std::string() : tok.token_bytes(id, true); };
  std::string text;
  if (has_tools(*format)) {
    auto t = format_tool_chat(*format, chat_context_of(spec.chat_template, std::time(nullptr)), messages,
                              tools, true, piece(spec.bos));
    if (!t) return t.error();
    text = std::move(*t);
  } else if (uses_tools(messages, tools)) {
    return format_tool_chat(*format, {}, messages, tools, true, {}).error();
  } else {
    text = format_chat(*format, messages, true, piece(spec.bos), piece(spec.eos));
  }
  return tok.encode(text, {.add_bos = false, .parse_special = true});
}

}  // namespace hearth
