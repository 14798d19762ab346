#pragma once
// Chat formatting for the templates common in GGUF files. Hearth does not run Jinja: it
// recognises the template family from `tokenizer.chat_template` and formats messages itself.

#include <span>
#include <string>
#include <string_view>

namespace hearth {

enum class chat_format {
  llama2,   //!< [INST] <<SYS>>...<</SYS>> ... [/INST]
  llama3,   //!< <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
  chatml,   //!< <|im_start|>role\n...<|im_end|>   (Qwen 2, SmolLM)
  mistral,  //!< [INST] ... [/INST] without a system block
  zephyr,   //!< <|user|>\n...</s>
  phi3,     //!< <|user|>\n...<|end|>\n   (Phi-3, Phi-3.5-mini, Phi-4-mini)
  plain,    //!< unknown template: "role: content" lines
};

struct chat_message {
  std::string role;  //!< "system", "user" or "assistant"
  std::string content;
};

const char* to_string(chat_format f);
//! Detects the family from template text; `plain` for empty or unrecognised text.
chat_format detect_chat_format(std::string_view jinja);
//! The canonical Jinja text of a family (what generated models embed); empty for `plain`.
std::string_view chat_template_text(chat_format f);

//! The prompt text, with special tokens written as text: encode it with parse_special = true.
//! `bos` / `eos` are the vocabulary's token texts (empty when absent).
std::string format_chat(chat_format f, std::span<const chat_message> messages,
                        bool add_generation_prompt, std::string_view bos, std::string_view eos);

}  // namespace hearth
