#pragma once
// Text <-> tokens for the two vocabulary kinds Llama-family GGUF files carry:
//   spm: SentencePiece-style (Llama 2, Mistral, TinyLlama): spaces as "▁", merges by score,
//        byte fallback tokens "<0xNN>" for what the vocabulary cannot spell.
//   bpe: byte-level BPE (Llama 3, Qwen 2, SmolLM, GPT-2): a pre-tokenizer splits the text, each
//        piece's bytes map to GPT-2's byte-to-unicode alphabet, merges apply by rank.
// Control-token text ("<|eot_id|>") in a prompt becomes that token only when the caller asks
// (`parse_special`); otherwise it is encoded as plain text, so users cannot forge control tokens.
// User-defined tokens (text a converter added, such as "<think>") are matched always, as
// llama.cpp and Hugging Face match them.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "model/vocab.hpp"

namespace hearth {

struct encode_options {
  bool add_bos = true;         //!< prepend BOS when the vocabulary asks for it (add_bos) and has one
  bool parse_special = false;  //!< recognise control / unknown token text in the input
};

class tokenizer {
 public:
  //! Validates the spec (ids in range, merges referring to tokens, byte tokens present).
  static result<tokenizer> create(vocab_spec spec);
  static result<tokenizer> from_gguf(const gguf::file& f);

  std::vector<token_id> encode(std::string_view text, const encode_options& opt = {}) const;
  //! The bytes a token stands for, its piece (may be part of a UTF-8 sequence; spm: "▁" as a
  //! space, a leading one included). Control tokens give their text only when `render_special`.
  std::string token_bytes(token_id id, bool render_special = false) const;
  //! A whole text from its start: the pieces, the first one without the space prefix the spm
  //! encoder added (llama.cpp's llama_detokenize); invalid UTF-8 left as is.
  std::string decode(std::span<const token_id> ids, bool render_special = false) const;

  tokenizer_kind kind() const;
  size_t n_vocab() const;
  token_id bos() const;
  token_id eos() const;
  token_id eot() const;
  bool is_end_of_generation(token_id id) const;  //!< eos, eot, or another end marker
  //! Every id is_end_of_generation holds for, in order.
  std::vector<token_id> end_of_generation_tokens() const;
  const vocab_spec& spec() const;

  tokenizer(tokenizer&&) noexcept;
  tokenizer& operator=(tokenizer&&) noexcept;
  ~tokenizer();

 private:
  struct impl;
  explicit tokenizer(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

//! Turns a stream of generated tokens into text in whole UTF-8 characters: bytes of a character
//! split over several tokens are held back until the character is complete. The tokens continue
//! a prompt, so every piece keeps its leading space ("▁a" after "hello" is " a"), as llama.cpp
//! streams them (token_to_piece without lstrip).
class stream_decoder {
 public:
  explicit stream_decoder(const tokenizer& tok, bool render_special = false);
  //! Text that became complete with this token (possibly empty).
  std::string push(token_id id);
  //! Whatever is held back at the end (an incomplete sequence comes out as U+FFFD).
  std::string flush();

 private:
  const tokenizer* tok_;
  bool render_special_;
  std::string pending_;
};

}  // namespace hearth
