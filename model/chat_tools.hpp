#pragma once
// Tools for the chat families whose templates have them: Llama 3.1+ (the tools in the first user
// turn, a call answered as one JSON object) and Qwen 2.5 (the tools in the system turn, calls in
// <tool_call> blocks). The prompt is what the model's own template renders (the tests hold it to
// llama.cpp's Jinja engine running those templates), and the model's answer is split back into
// text and calls, also while it streams.

#include <ctime>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "model/chat_template.hpp"

namespace hearth {

//! Python's str.strip() / Jinja's trim, for the ASCII whitespace prompts contain.
std::string_view strip(std::string_view s);

//! Whether the family renders tools and answers with calls.
bool has_tools(chat_format f);

//! What a template's text adds to its family's turns.
struct chat_context {
  std::string default_system;  //!< qwen25: the system turn of a conversation without one
  std::string date;            //!< llama31: the system turn's "Today Date"
};
//! The family's reference template's context: Qwen 2.5's default system turn, Llama 3.1's date.
chat_context default_chat_context(chat_format f);
//! The context a file's template gives: its default system turn if it has Qwen 2.5's, and the
//! day of `now` if it dates its prompts (strftime_now, Llama 3.2 and later), else Llama 3.1's date.
chat_context chat_context_of(std::string_view jinja, std::time_t now);

//! The prompt of a conversation for a family with tools; `tools` are the tool objects' JSON texts
//! as the client sent them ({"type": "function", "function": {...}}), rendered with the client's
//! key order. errc::invalid_argument for a family without tools, for what the template refuses
//! (Llama 3.1: tools without a first user turn, two calls in one turn, naming the turn) and for
//! tools or arguments that are not JSON.
result<std::string> format_tool_chat(chat_format f, const chat_context& ctx,
                                     std::span<const chat_message> messages,
                                     std::span<const std::string> tools, bool add_generation_prompt,
                                     std::string_view bos);

//! An answer split into what it says and the calls it makes.
struct assistant_reply {
  std::string content;
  std::vector<tool_call> calls = {};
};

//! The family's calls in a whole answer; text that is not a well-formed call stays content.
assistant_reply parse_tool_calls(chat_format f, std::string_view text);

//! The same for an answer as it streams: each push() gives the text that can be shown now and
//! the calls completed by it; what might still become a call (a partial "<tool_call>", a Llama
//! answer that opens with '{') is held back until it is decided or finish() ends the answer.
//! The pieces of every push() and finish() together are parse_tool_calls' answer.
class tool_call_stream {
 public:
  explicit tool_call_stream(chat_format f) : format_(f) {}
  assistant_reply push(std::string_view text);
  assistant_reply finish();

 private:
  void push_hermes(assistant_reply& out);
  void push_llama(assistant_reply& out);

  chat_format format_;
  std::string pending_;      // text not yet given out
  bool in_call_ = false;     // qwen25: inside a <tool_call> block
  bool after_call_ = false;  // qwen25: the whitespace after a block is dropped
  enum class lead { undecided, text, call } lead_ = lead::undecided;  // llama31: how the answer opens
};

}  // namespace hearth
