#pragma once
// Chat formatting for the templates common in GGUF files. Hearth does not run Jinja: it
// recognises the template family from `tokenizer.chat_template` and formats messages itself.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace hearth {

enum class chat_format {
  llama2,   //!< [INST] <<SYS>>...<</SYS>> ... [/INST]
  llama3,   //!< <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
  llama31,  //!< Llama 3's turns, a dated system turn, tools and JSON calls (Llama 3.1, 3.2, 3.3)
  chatml,   //!< <|im_start|>role\n...<|im_end|>   (Qwen 2, SmolLM)
  qwen25,   //!< ChatML with a default system turn, tools and <tool_call> blocks (Qwen 2.5, Qwen 3)
  mistral,  //!< [INST] ... [/INST] without a system block
  zephyr,   //!< <|user|>\n...</s>
  phi3,     //!< <|user|>\n...<|end|>\n   (Phi-3, Phi-3.5-mini, Phi-4-mini)
  gemma,    //!< <start_of_turn>user\n...<end_of_turn>\n   (Gemma 2, Gemma 3; no system role)
  plain,    //!< a file without a template: "role: content" lines
};

//! A function the model asked to call.
struct tool_call {
  std::string name;
  std::string arguments;  //!< a JSON object, as text
};

struct chat_message {
  std::string role;  //!< "system", "user", "assistant" or "tool" (a call's result)
  std::string content;
  std::vector<tool_call> tool_calls = {};  //!< an assistant's calls
};

const char* to_string(chat_format f);
//! The family of a template text: `plain` for an empty text (a file without a template), nothing
//! for a text Hearth does not recognise.
std::optional<chat_format> detect_chat_format(std::string_view jinja);
//! to_string of the detected family, or "unrecognised": what `model info` and `models` show.
const char* chat_format_name(std::string_view jinja);
//! "llama2, llama3, ...": the families detect_chat_format recognises, for messages.
std::string recognised_chat_formats();
//! detect_chat_format as a value to act on: errc::unsupported for an unrecognised template (never
//! formatted as plain text, which the model would not follow), listing what Hearth recognises.
result<chat_format> chat_format_of(std::string_view jinja);
//! The canonical Jinja text of a family (what generated models embed); empty for `plain`.
std::string_view chat_template_text(chat_format f);

//! The prompt text, with special tokens written as text: encode it with parse_special = true.
//! `bos` / `eos` are the vocabulary's token texts (empty when absent). Turns without tools
//! (chat_tools.hpp formats those); llama31 and qwen25 as their reference templates, undated.
std::string format_chat(chat_format f, std::span<const chat_message> messages, bool add_generation_prompt,
                        std::string_view bos, std::string_view eos);

}  // namespace hearth
