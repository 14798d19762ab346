#pragma once
// Internals shared by tokenizer.cpp (validation, specials, decoding), tokenizer_spm.cpp and
// tokenizer_bpe.cpp (the two encoders). Not part of the public interface.

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/pretokenizer.hpp"
#include "model/tokenizer.hpp"

namespace hearth {

struct string_hash {
  using is_transparent = void;  // lets maps keyed by std::string look up string_views without copies
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using text_to_token_map = std::unordered_map<std::string, token_id, string_hash, std::equal_to<>>;

struct bpe_merge {
  int32_t rank;     // position in vocab_spec::merges; lower merges first
  token_id result;  // the token spelled by left + right
};

// Everything a tokenizer knows; tokenizer::impl is this, under a name the .cpp files can use freely.
struct tokenizer_state {
  vocab_spec spec;
  //! Tokens that ordinary text may turn into: normal and undefined types (bpe: byte too). The first
  //! of several tokens with the same text wins.
  text_to_token_map plain;
  //! Control, user-defined and unknown tokens, matched in text only with parse_special;
  //! longest text first (ties by id), as llama.cpp partitions the text.
  std::vector<token_id> specials;
  //! Token per byte value for byte fallback: spm "<0xNN>", bpe the byte's alphabet character.
  std::array<token_id, 256> byte_token{};
  std::vector<bool> end_of_generation;  // per token id
  // bpe only
  std::unordered_map<uint64_t, bpe_merge> merges;  // key: left id << 32 | right id
  pretokenizer_kind pre = pretokenizer_kind::gpt2;
  bool ignore_merges = false;  // Llama 3: a piece that is a whole token skips the merges

  bool is_special(token_id id) const;
  //! Appends the tokens for one stretch of ordinary text (no special-token matching).
  void encode_spm(std::string_view text, bool space_prefix, std::vector<token_id>& out) const;
  void encode_bpe(std::string_view text, std::vector<token_id>& out) const;
  //! Byte fallback: a byte's token, else unk, else nothing.
  void push_byte(uint8_t b, std::vector<token_id>& out) const;
};

struct tokenizer::impl : tokenizer_state {};

}  // namespace hearth
