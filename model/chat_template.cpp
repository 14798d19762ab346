#include "model/chat_template.hpp"

#include <optional>

#include "model/chat_tools.hpp"

namespace hearth {
namespace {

// Qwen 2.5's instructions for its tools (Qwen 3's are the same words).
constexpr std::string_view qwen_tool_instructions =
    "You may call one or more functions to assist with the user query.";

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
    case chat_format::llama31:
      return "llama3.1";
    case chat_format::qwen25:
      return "qwen2.5";
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
  // llama.cpp's tests for templates with tools: Llama 3.1's ipython role, Hermes-style calls;
  // of the latter, Hearth formats Qwen 2.5's tool instructions.
  if (has("<|start_header_id|>"))
    return has("<|start_header_id|>ipython<|end_header_id|>") ? chat_format::llama31 : chat_format::llama3;
  if (has("<|im_start|>"))
    return has("<tool_call>") && has(qwen_tool_instructions) ? chat_format::qwen25 : chat_format::chatml;
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
  for (const chat_format f : {chat_format::llama2, chat_format::llama3, chat_format::llama31,
                              chat_format::chatml, chat_format::qwen25, chat_format::mistral,
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

std::string format_chat(chat_format f, std::span<const chat_message> messages, bool add_generation_prompt,
                        std::string_view bos, std::string_view eos) {
  switch (f) {
    case chat_format::llama2:
      return format_llama2(messages, bos, eos);
    case chat_format::llama3:
      return format_llama3(messages, add_generation_prompt, bos);
    case chat_format::llama31:
    case chat_format::qwen25:  // turns without tools: nothing the template could refuse
      return format_tool_chat(f, default_chat_context(f), messages, {}, add_generation_prompt, bos).value();
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
