#include <catch2/catch.hpp>

#include <vector>

#include "model/chat_template.hpp"

using namespace hearth;

// Expected prompts below were checked against Jinja2 3.1 rendering the templates of
// chat_template_text() the way Hugging Face does (trim_blocks, lstrip_blocks).

namespace {

const std::vector<chat_message> conversation = {
    {"system", "You are a helpful assistant."},
    {"user", "Hello!"},
    {"assistant", "Hi there."},
    {"user", "What's the weather?"},
};

std::string format(chat_format f, bool add_generation_prompt,
                   std::span<const chat_message> msgs = conversation) {
  const bool llama3 = f == chat_format::llama3;
  return format_chat(f, msgs, add_generation_prompt, llama3 ? "<|begin_of_text|>" : "<s>",
                     llama3 ? "<|end_of_text|>" : "</s>");
}

}  // namespace

TEST_CASE("each family is detected from its canonical template text", "[chat_template]") {
  for (const chat_format f :
       {chat_format::llama2, chat_format::llama3, chat_format::llama31, chat_format::chatml,
        chat_format::qwen25, chat_format::mistral, chat_format::zephyr, chat_format::phi3, chat_format::gemma,
        chat_format::plain}) {
    CAPTURE(to_string(f));
    CHECK(detect_chat_format(chat_template_text(f)) == f);
  }
  CHECK(chat_template_text(chat_format::plain).empty());
}

TEST_CASE("detection reads other models' variants by their markers", "[chat_template]") {
  // Llama 3.1 (excerpt), Qwen 2 (excerpt), TinyLlama chat (Zephyr), a hand-written Alpaca template.
  CHECK(detect_chat_format("{{- bos_token }}{%- if custom_tools is defined %}{{- '<|start_header_id|>system"
                           "<|end_header_id|>\\n\\n' }}") == chat_format::llama3);
  CHECK(detect_chat_format("{% for message in messages %}{% if loop.first and messages[0]['role'] != "
                           "'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' "
                           "}}{% endif %}") == chat_format::chatml);
  CHECK(detect_chat_format("{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + "
                           "eos_token }}") == chat_format::zephyr);
  // Phi-4-mini: no newlines, the same markers (llama.cpp formats it as Phi-3).
  CHECK(detect_chat_format("{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endfor %}"
                           "{% if add_generation_prompt %}{{ '<|assistant|>' }}") == chat_format::phi3);
  CHECK(detect_chat_format("{{ '[INST] ' + message['content'] + ' [/INST]' }}") == chat_format::mistral);
  CHECK(detect_chat_format("'[INST] ' + '<<SYS>>\\n' + system_message") == chat_format::llama2);
  // Gemma 3's template (excerpt): the same markers as Gemma 2's.
  CHECK(detect_chat_format(
            "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}") ==
        chat_format::gemma);
  // A template without a known family's markers is not recognised; no template at all is plain.
  CHECK_FALSE(detect_chat_format("### Instruction:\n{{ prompt }}\n### Response:\n"));
  CHECK(detect_chat_format("") == chat_format::plain);
}

TEST_CASE("an unrecognised template is an error naming the recognised families, never plain",
          "[chat_template]") {
  auto unknown = chat_format_of("### Instruction:\n{{ prompt }}\n### Response:\n");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == errc::unsupported);
  CHECK_THAT(unknown.error().message,
             Catch::Contains("chat template not recognised") &&
                 Catch::Contains("llama2, llama3, llama3.1, chatml, qwen2.5, mistral, zephyr, phi3, gemma"));
  CHECK(std::string(chat_format_name("### Response:")) == "unrecognised");
  REQUIRE(chat_format_of("").ok());
  CHECK(*chat_format_of("") == chat_format::plain);
  CHECK(std::string(chat_format_name("")) == "plain");
}

TEST_CASE("format names", "[chat_template]") {
  CHECK(std::string(to_string(chat_format::llama2)) == "llama2");
  CHECK(std::string(to_string(chat_format::llama3)) == "llama3");
  CHECK(std::string(to_string(chat_format::chatml)) == "chatml");
  CHECK(std::string(to_string(chat_format::mistral)) == "mistral");
  CHECK(std::string(to_string(chat_format::zephyr)) == "zephyr");
  CHECK(std::string(to_string(chat_format::phi3)) == "phi3");
  CHECK(std::string(to_string(chat_format::gemma)) == "gemma");
  CHECK(std::string(to_string(chat_format::plain)) == "plain");
}

TEST_CASE("Llama 3: bos once, headers, trimmed content, assistant header as generation prompt",
          "[chat_template]") {
  const std::string turns =
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\nHi there.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nWhat's the weather?<|eot_id|>";
  CHECK(format(chat_format::llama3, false) == turns);
  CHECK(format(chat_format::llama3, true) == turns + "<|start_header_id|>assistant<|end_header_id|>\n\n");

  const std::vector<chat_message> padded = {{"user", " \n Hello!\t\n"}};
  CHECK(format(chat_format::llama3, false, padded) ==
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>");
}

TEST_CASE("Llama 2: system folded into the first user turn, no generation prompt", "[chat_template]") {
  const std::string expected =
      "<s>[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello! [/INST] Hi there. </s>"
      "<s>[INST] What's the weather? [/INST]";
  CHECK(format(chat_format::llama2, false) == expected);
  CHECK(format(chat_format::llama2, true) == expected);

  const std::span<const chat_message> no_system = std::span(conversation).subspan(1);
  CHECK(format(chat_format::llama2, true, no_system) ==
        "<s>[INST] Hello! [/INST] Hi there. </s><s>[INST] What's the weather? [/INST]");
  const std::vector<chat_message> padded = {{"user", "  Hello!\n"}};
  CHECK(format(chat_format::llama2, false, padded) == "<s>[INST] Hello! [/INST]");
}

TEST_CASE("ChatML: im_start/im_end turns, assistant opener as generation prompt", "[chat_template]") {
  const std::string turns =
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
      "<|im_start|>assistant\nHi there.<|im_end|>\n<|im_start|>user\nWhat's the weather?<|im_end|>\n";
  CHECK(format(chat_format::chatml, false) == turns);
  CHECK(format(chat_format::chatml, true) == turns + "<|im_start|>assistant\n");
}

TEST_CASE("Mistral v0.1: bos once, [INST] turns, system opens the first user turn", "[chat_template]") {
  const std::span<const chat_message> no_system = std::span(conversation).subspan(1);
  const std::string plain_turns = "<s>[INST] Hello! [/INST]Hi there.</s>[INST] What's the weather? [/INST]";
  CHECK(format(chat_format::mistral, false, no_system) == plain_turns);
  CHECK(format(chat_format::mistral, true, no_system) == plain_turns);
  CHECK(format(chat_format::mistral, true) ==
        "<s>[INST] You are a helpful assistant.\n\nHello! [/INST]Hi there.</s>[INST] What's the weather? "
        "[/INST]");
}

TEST_CASE("Zephyr: role tags, eos after each turn, assistant tag as generation prompt", "[chat_template]") {
  const std::string turns =
      "<|system|>\nYou are a helpful assistant.</s>\n<|user|>\nHello!</s>\n<|assistant|>\nHi there.</s>\n"
      "<|user|>\nWhat's the weather?</s>\n";
  CHECK(format(chat_format::zephyr, false) == turns);
  CHECK(format(chat_format::zephyr, true) == turns + "<|assistant|>\n");
}

TEST_CASE("Phi-3: role tags, <|end|> after each turn, assistant tag and newline as generation prompt",
          "[chat_template]") {
  const std::string turns =
      "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHello!<|end|>\n<|assistant|>\nHi "
      "there.<|end|>\n"
      "<|user|>\nWhat's the weather?<|end|>\n";
  CHECK(format(chat_format::phi3, false) == turns);
  CHECK(format(chat_format::phi3, true) == turns + "<|assistant|>\n");
}

TEST_CASE("Gemma: bos, <start_of_turn>role, trimmed content, <end_of_turn>, model as the assistant",
          "[chat_template]") {
  const std::vector<chat_message> no_system{
      {"user", " Hello! "}, {"assistant", "Hi there."}, {"user", "What's the weather?"}};
  const std::string turns =
      "<s><start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\nHi there.<end_of_turn>\n"
      "<start_of_turn>user\nWhat's the weather?<end_of_turn>\n";
  CHECK(format(chat_format::gemma, false, no_system) == turns);
  CHECK(format(chat_format::gemma, true, no_system) == turns + "<start_of_turn>model\n");
  // No system role: llama.cpp's formatter opens the next user turn with it and a blank line.
  CHECK(format(chat_format::gemma, true) ==
        "<s><start_of_turn>user\nYou are a helpful assistant.\n\nHello!<end_of_turn>\n<start_of_turn>model\n"
        "Hi there.<end_of_turn>\n<start_of_turn>user\n"
        "What's the weather?<end_of_turn>\n<start_of_turn>model\n");
}

TEST_CASE("plain: role-prefixed lines", "[chat_template]") {
  const std::string turns =
      "system: You are a helpful assistant.\nuser: Hello!\nassistant: Hi there.\nuser: What's the weather?\n";
  CHECK(format(chat_format::plain, false) == turns);
  CHECK(format(chat_format::plain, true) == turns + "assistant:");
}

TEST_CASE("an empty conversation formats without crashing", "[chat_template]") {
  const std::vector<chat_message> none;
  CHECK(format(chat_format::llama3, true, none) == "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(format(chat_format::llama2, true, none).empty());
  CHECK(format(chat_format::mistral, true, none) == "<s>");
  CHECK(format(chat_format::zephyr, true, none).empty());
  CHECK(format(chat_format::phi3, true, none) == "<|assistant|>\n");
  CHECK(format(chat_format::chatml, true, none) == "<|im_start|>assistant\n");
  CHECK(format(chat_format::gemma, true, none) == "<s><start_of_turn>model\n");
}
