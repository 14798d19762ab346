#pragma once
// Prompts of an exact token length, as text: the bench sends text over the wire (the server
// tokenizes it), so the text must re-encode to exactly the planned count with the model's
// tokenizer, BOS included as the model's file adds it. Each request gets its own text (seeded),
// so the prefix cache does not make the run trivial; a class may share a leading system prompt
// (as a RAG service does), whose tokens are then the same leading tokens of every such prompt.
//
// The text is household pseudo-English (model/synthetic_text.hpp, what the generated models'
// vocabularies were learned from), cut where its word pieces begin, so that the token count
// grows piece by piece; the last piece is then extended character by character to land on the
// count exactly. Every result is checked by re-encoding.

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "common/result.hpp"
#include "model/tokenizer.hpp"

namespace hearth::household {

class prompt_synth {
 public:
  explicit prompt_synth(const tokenizer& tok) : tok_(&tok) {}

  //! Text of exactly n tokens. Its first `shared` tokens are the same for every call with the same
  //! shared_seed (0: none shared). errc::invalid_argument when n is too small to hold any text.
  result<std::string> make(uint32_t n, uint64_t seed, uint32_t shared = 0, uint64_t shared_seed = 0);
  //! Tokens of a prompt text, as the server counts them.
  size_t count(std::string_view text) const;

 private:
  result<std::string> fit(const std::string& head, uint32_t n, uint64_t seed) const;

  const tokenizer* tok_;
  std::map<std::pair<uint32_t, uint64_t>, std::string> shared_;  // (tokens, seed) -> prefix text
};

}  // namespace hearth::household
