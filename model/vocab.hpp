#pragma once
// A tokenizer vocabulary as GGUF stores it under `tokenizer.ggml.*`, independent of the file.
// Keys: model ("llama" = SentencePiece, "gpt2" = byte-level BPE), pre (pre-tokenizer name),
// tokens, scores (spm), token_type, merges (bpe), bos/eos/eot/unk/pad token ids,
// add_bos_token, add_eos_token, add_space_prefix, and tokenizer.chat_template.

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace hearth {

namespace gguf {
class file;
class writer;
}  // namespace gguf

using token_id = int32_t;
constexpr token_id no_token = -1;

enum class tokenizer_kind { spm, bpe };

//! GGUF token types (llama.cpp's llama_token_type numbering).
enum class token_type : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

struct vocab_spec {
  tokenizer_kind kind = tokenizer_kind::bpe;
  std::string pre = "default";      //!< bpe pre-tokenizer: "llama-bpe" (Llama 3), "qwen2", "gpt2", "default"
  std::vector<std::string> tokens;  //!< token text as stored (spm: "▁" for space; bpe: GPT-2 byte-to-unicode)
  std::vector<float> scores;        //!< spm merge priority (higher first); may be empty for bpe
  std::vector<token_type> types;    //!< same length as tokens
  std::vector<std::string> merges;  //!< bpe: "left right", highest priority first
  token_id bos = no_token, eos = no_token, eot = no_token, unk = no_token, pad = no_token;
  bool add_bos = false;
  bool add_eos = false;
  //! spm only: a space before the text and after each special token, dropped again from the
  //! first token when decoding (SentencePiece's add_dummy_prefix; on unless the file says off).
  bool add_space_prefix = true;
  //! Special tokens (but <unk>, <s>, <|endoftext|>) take the whitespace after them in a text, as
  //! Phi-3's tokenizer does. Not a GGUF key: llama.cpp sets it for models named "phi-3"/"phi3"
  //! (general.name), and read_vocab does the same.
  bool rstrip_specials = false;
  std::string chat_template;  //!< Jinja text, may be empty
};

//! Reads tokenizer.ggml.* from a file; errors name the missing or inconsistent key.
result<vocab_spec> read_vocab(const gguf::file& f);
//! Writes the same keys.
void write_vocab(const vocab_spec& v, gguf::writer& w);

}  // namespace hearth
