#pragma once
// Byte-level BPE training. Input: pre-tokenized pieces (raw bytes) with their counts. Start from
// the 256 single bytes; repeatedly merge the most frequent adjacent pair of tokens, counting each
// piece `count` times, until the requested number of merges or until no pair occurs twice.
//
// Ties: among pairs of equal count, the one whose (left bytes, right bytes) sorts first (bytes
// compared as unsigned) wins, so the result depends only on the input, never on hash order.
// Every merge makes a new token: a pair whose concatenation is already a token (reachable by
// another split, e.g. "ab"+"c" after "a"+"bc") is never merged, so merges and new tokens
// correspond one to one.
//
// Cost: pair counts and each pair's list of pieces are updated only for the pieces a merge
// touches; a lazy max-heap picks the next pair.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace hearth {

//! One merge: the raw bytes of its two tokens; the new token is left + right.
struct bpe_merge {
  std::string left;
  std::string right;
  friend bool operator==(const bpe_merge&, const bpe_merge&) = default;
};

//! Up to `max_merges` merges in rank order (first = highest priority). Pieces that are empty or
//! have count 0 are ignored; duplicate pieces add up.
std::vector<bpe_merge> train_bpe(std::span<const std::pair<std::string, uint64_t>> pieces, size_t max_merges);

}  // namespace hearth
