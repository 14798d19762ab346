#pragma once
// Chat turns to prompt tokens with the model's own template: what `hearth generate --chat` and
// the server's `messages` both use, so the two give the same prompt for the same turns.

#include <span>
#include <vector>

#include "model/chat_template.hpp"
#include "model/tokenizer.hpp"

namespace hearth {

//! The turns formatted with the tokenizer's chat template (chat_format::plain when unrecognised),
//! ending with the assistant's cue; the template's markers are parsed as special tokens.
std::vector<token_id> encode_chat(const tokenizer& tok, std::span<const chat_message> messages);

}  // namespace hearth
