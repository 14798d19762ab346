#pragma once
// Chat turns to prompt tokens with the model's own template: what `hearth generate --chat` and
// the server's `messages` both use, so the two give the same prompt for the same turns.

#include <span>
#include <string>
#include <vector>

#include "model/chat_template.hpp"
#include "model/tokenizer.hpp"

namespace hearth {

//! The turns formatted with the tokenizer's chat template (chat_format::plain for a vocabulary
//! without one), ending with the assistant's cue; the template's markers are parsed as special
//! tokens. `tools`: the tool objects' JSON texts (chat_tools.hpp). errc::unsupported
//! (chat_format_of's) for a template Hearth does not recognise; format_tool_chat's errors, also
//! for tools, tool calls or tool results given to a family without them.
result<std::vector<token_id>> encode_chat(const tokenizer& tok, std::span<const chat_message> messages,
                                          std::span<const std::string> tools = {});

}  // namespace hearth
