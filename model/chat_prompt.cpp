#include "model/chat_prompt.hpp"

namespace hearth {

result<std::vector<token_id>> encode_chat(const tokenizer& tok, std::span<const chat_message> messages) {
  const auto& spec = tok.spec();
  auto format = chat_format_of(spec.chat_template);
  if (!format) return format.error();
  auto piece = [&](token_id id) { return id == no_token ? std::string() : tok.token_bytes(id, true); };
  const std::string text = format_chat(*format, messages, true, piece(spec.bos), piece(spec.eos));
  return tok.encode(text, {.add_bos = false, .parse_special = true});
}

}  // namespace hearth
