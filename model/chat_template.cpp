#include "model/chat_template.hpp"

#include <optional>

namespace hearth {
namespace {

// The templates as their models' tokenizer_config.json store them, after JSON unescaping: Llama 3,
// ChatML and Zephyr hold real newlines inside their string literals, Llama 2 holds "\n" escapes.

// meta-llama/Meta-Llama-3-8B-Instruct
constexpr std::string_view llama3_template =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

// meta-llama/Llama-2-7b-chat-hf
constexpr std::string_view llama2_template =
    R"({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %})"
    R"({% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %})"
    R"({% set system_message = false %}{% endif %}{% for message in loop_messages %})"
    R"({% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %})"
    R"({{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }})"
    R"({% endif %}{% if loop.index0 == 0 and system_message != false %})"
    R"({% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %})"
    R"({% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %})"
    R"({{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }})"
    R"({% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }})"
    R"({% endif %}{% endfor %})";

// The ChatML template of Hugging Face's chat-templating guide (Qwen 2 and SmolLM add a default
// system message; the turn format is the same).
constexpr std::string_view chatml_template =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}";

// mistralai/Mistral-7B-Instruct-v0.1 (and Mixtral-8x7B-Instruct-v0.1)
constexpr std::string_view mistral_template =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}"
    "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant "
    "roles are supported!') }}{% endif %}{% endfor %}";

// HuggingFaceH4/zephyr-7b-beta (also TinyLlama-1.1B-Chat)
constexpr std::string_view zephyr_template =
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + "
    "message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + "
    "message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n"
    "{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n"
    "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}";

// microsoft/Phi-3.5-mini-instruct (Phi-3-mini's later revisions are the same turns). Phi-4-mini
// writes no newline after a role's marker or <|end|>; llama.cpp formats both as Phi-3 does, and
// so does Hearth.
constexpr std::string_view phi3_template =
    "{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}"
    "{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}"
    "{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}"
    "{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}";

// google/gemma-2-2b-it (Gemma 3's instruction models use the same turns and markers)
constexpr std::string_view gemma_template =
    R"({{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }})"
    R"({% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %})"
    R"({{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %})"
    R"({% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %})"
    R"({% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %})"
    R"({% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %})";

// Python's str.strip() / Jinja's trim, for the ASCII whitespace prompts contain.
std::string_view strip(std::string_view s) {
  constexpr std::string_view space = " \t\n\r\v\f";
  const size_t first = s.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

// Llama 2 and Mistral have no system turn: a leading system message is folded into the first
// turn after it, which `first_content` returns; the rest of the turns are messages[1..].
struct folded_chat {
  std::span<const chat_message> turns;
  std::optional<std::string> first_content;
};

folded_chat fold_system(std::span<const chat_message> messages, std::string_view before,
                        std::string_view after) {
  if (messages.size() < 2 || messages[0].role != "system") return {messages, std::nullopt};
  std::string content(before);
  content += messages[0].content;
  content += after;
  content += messages[1].content;
  return {messages.subspan(1), std::move(content)};
}

const std::string& content_of(const folded_chat& chat, size_t i) {
  return i == 0 && chat.first_content ? *chat.first_content : chat.turns[i].content;
}

std::string format_llama3(std::span<const chat_message> messages, bool add_generation_prompt,
                          std::string_view bos) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == 0) out += bos;
    out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n";
    out += strip(messages[i].content);
    out += "<|eot_id|>";
  }
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// The template has no generation prompt: a prompt ending in " [/INST]" already asks for one.
std::string format_llama2(std::span<const chat_message> messages, std::string_view bos,
                          std::string_view eos) {
  const folded_chat chat = fold_system(messages, "<<SYS>>\n", "\n<</SYS>>\n\n");
  std::string out;
  for (size_t i = 0; i < chat.turns.size(); ++i) {
    const std::string_view content = strip(content_of(chat, i));
    if (chat.turns[i].role == "user") {
      out.append(bos).append("[INST] ").append(content).append(" [/INST]");
    } else if (chat.turns[i].role == "assistant") {
      out.append(" ").append(content).append(" ").append(eos);
    }
  }
  return out;
}

// The real template rejects a system message; here it opens the first user turn, separated by
// a blank line as Mistral's later templates do.
std::string format_mistral(std::span<const chat_message> messages, std::string_view bos,
                           std::string_view eos) {
  const folded_chat chat = fold_system(messages, "", "\n\n");
  std::string out(bos);
  for (size_t i = 0; i < chat.turns.size(); ++i) {
    const std::string& content = content_of(chat, i);
    if (chat.turns[i].role == "user") {
      out.append("[INST] ").append(content).append(" [/INST]");
    } else if (chat.turns[i].role == "assistant") {
      out.append(content).append(eos);
    }
  }
  return out;
}

std::string format_chatml(std::span<const chat_message> messages, bool add_generation_prompt) {
  std::string out;
  for (const chat_message& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

// Rendered with Hugging Face's trim_blocks: the newline after each `}}` stays, those after `%}` go.
std::string format_zephyr(std::span<const chat_message> messages, bool add_generation_prompt,
                          std::string_view eos) {
  std::string out;
  for (const chat_message& m : messages) {
    if (m.role != "user" && m.role != "system" && m.role != "assistant") continue;
    out.append("<|").append(m.role).append("|>\n").append(m.content).append(eos).append("\n");
  }
  if (add_generation_prompt && !messages.empty()) out += "<|assistant|>\n";
  return out;
}

// Each turn closes with <|end|>, the token Phi-3 ends its answers with (the vocabulary's eot).
std::string format_phi3(std::span<const chat_message> messages, bool add_generation_prompt) {
  std::string out;
  for (const chat_message& m : messages) {
    if (m.role != "user" && m.role != "system" && m.role != "assistant") continue;
    if (m.role == "system" && m.content.empty()) continue;
    out.append("<|").append(m.role).append("|>\n").append(m.content).append("<|end|>\n");
  }
  if (add_generation_prompt) out += "<|assistant|>\n";
  return out;
}

// Gemma has no system turn: its template raises on one, llama.cpp (llama-chat.cpp,
// LLM_CHAT_TEMPLATE_GEMMA) opens the next user turn with it, trimmed, and a blank line; so does
// Hearth. The assistant's role is "model"; the template's bos_token comes first.
std::string format_gemma(std::span<const chat_message> messages, bool add_generation_prompt,
                         std::string_view bos) {
  std::string out(bos);
  std::string system;
  for (const chat_message& m : messages) {
    if (m.role == "system") {
      system = strip(m.content);
      continue;
    }
    const std::string role = m.role == "assistant" ? "model" : m.role;
    out.append("<start_of_turn>").append(role).append("\n");
    if (!system.empty() && role != "model") {
      out.append(system).append("\n\n");
      system.clear();
    }
    out.append(strip(m.content)).append("<end_of_turn>\n");
  }
  if (add_generation_prompt) out += "<start_of_turn>model\n";
  return out;
}

std::string format_plain(std::span<const chat_message> messages, bool add_generation_prompt) {
  std::string out;
  for (const chat_message& m : messages) out += m.role + ": " + m.content + "\n";
  if (add_generation_prompt) out += "assistant:";
  return out;
}

}  // namespace

const char* to_string(chat_format f) {
  switch (f) {
    case chat_format::llama2:
      return "llama2";
    case chat_format::llama3:
      return "llama3";
    case chat_format::chatml:
      return "chatml";
    case chat_format::mistral:
      return "mistral";
    case chat_format::zephyr:
      return "zephyr";
    case chat_format::phi3:
      return "phi3";
    case chat_format::gemma:
      return "gemma";
    case chat_format::plain:
      return "plain";
  }
  return "plain";
}

std::optional<chat_format> detect_chat_format(std::string_view jinja) {
  if (jinja.empty()) return chat_format::plain;
  const auto has = [&](std::string_view marker) { return jinja.find(marker) != std::string_view::npos; };
  if (has("<|start_header_id|>")) return chat_format::llama3;
  if (has("<|im_start|>")) return chat_format::chatml;
  if (has("<start_of_turn>")) return chat_format::gemma;  // llama.cpp's test for Gemma
  // Phi-3 shares Zephyr's role markers and closes turns with <|end|> (llama.cpp's test too).
  if (has("<|assistant|>") && has("<|end|>")) return chat_format::phi3;
  if (has("<|user|>")) return chat_format::zephyr;
  if (has("[INST]")) return has("<<SYS>>") ? chat_format::llama2 : chat_format::mistral;
  return std::nullopt;
}

const char* chat_format_name(std::string_view jinja) {
  const auto f = detect_chat_format(jinja);
  return f ? to_string(*f) : "unrecognised";
}

std::string recognised_chat_formats() {
  std::string out;
  for (const chat_format f :
       {chat_format::llama2, chat_format::llama3, chat_format::chatml, chat_format::mistral,
        chat_format::zephyr, chat_format::phi3, chat_format::gemma}) {
    out += (out.empty() ? "" : ", ") + std::string(to_string(f));
  }
  return out;
}

result<chat_format> chat_format_of(std::string_view jinja) {
  if (auto f = detect_chat_format(jinja)) return *f;
  return error{errc::unsupported, "chat template not recognised (Hearth formats " +
                                      recognised_chat_formats() +
                                      "; a file without a template gets plain 'role: content' lines)"};
}

std::string_view chat_template_text(chat_format f) {
  switch (f) {
    case chat_format::llama2:
      return llama2_template;
    case chat_format::llama3:
      return llama3_template;
    case chat_format::chatml:
      return chatml_template;
    case chat_format::mistral:
      return mistral_template;
    case chat_format::zephyr:
      return zephyr_template;
    case chat_format::phi3:
      return phi3_template;
    case chat_format::gemma:
      return gemma_template;
    case chat_format::plain:
      return {};
  }
  return {};
}

std::string format_chat(chat_format f, std::span<const chat_message> messages, bool add_generation_prompt,
                        std::string_view bos, std::string_view eos) {
  switch (f) {
    case chat_format::llama2:
      return format_llama2(messages, bos, eos);
    case chat_format::llama3:
      return format_llama3(messages, add_generation_prompt, bos);
    case chat_format::chatml:
      return format_chatml(messages, add_generation_prompt);
    case chat_format::mistral:
      return format_mistral(messages, bos, eos);
    case chat_format::zephyr:
      return format_zephyr(messages, add_generation_prompt, eos);
    case chat_format::phi3:
      return format_phi3(messages, add_generation_prompt);
    case chat_format::gemma:
      return format_gemma(messages, add_generation_prompt, bos);
    case chat_format::plain:
      return format_plain(messages, add_generation_prompt);
  }
  return format_plain(messages, add_generation_prompt);
}

}  // namespace hearth
