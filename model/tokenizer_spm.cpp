// SentencePiece-style encoding, as llama.cpp's llm_tokenizer_spm: the text (spaces as "▁") starts as
// one symbol per UTF-8 character; the adjacent pair whose concatenation is the highest-scoring token
// merges first (ties: leftmost), until no pair is a token. Symbols that are not tokens fall back to
// byte tokens, byte for byte: a "▁" the vocabulary lacks becomes <0xE2><0x96><0x81>, not a space.

#include <algorithm>
#include <cstdint>
#include <queue>

#include "model/tokenizer_impl.hpp"

namespace hearth {
namespace {

const std::string_view escaped_space = "\u2581";  // "▁"

struct symbol {
  size_t offset, len;  // bytes of the escaped text; len 0 once merged into its left neighbour
  int prev, next;      // neighbours in the list, -1 at the ends
};

struct bigram {
  float score;
  int left, right;
  size_t len;  // combined length when queued; a mismatch later means a side has changed

  bool operator<(const bigram& o) const {  // std::priority_queue pops the greatest
    return score < o.score || (score == o.score && left > o.left);
  }
};

std::string escape_spaces(std::string_view text, bool space_prefix) {
  std::string out;
  out.reserve(text.size() + 3);
  if (space_prefix) out += escaped_space;
  for (char c : text) {
    if (c == ' ')
      out += escaped_space;
    else
      out += c;
  }
  return out;
}

// A character's length as llama.cpp's unicode_len_utf8 reads it, from the lead byte alone: in
// invalid UTF-8 a symbol may swallow the bytes after it, and must, for the same tokens.
size_t lead_byte_length(char lead) {
  static constexpr size_t by_high_nibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return by_high_nibble[static_cast<uint8_t>(lead) >> 4];
}

std::vector<symbol> split_characters(std::string_view text) {
  std::vector<symbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = std::min(lead_byte_length(text[pos]), text.size() - pos);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({pos, len, index - 1, pos + len == text.size() ? -1 : index + 1});
    pos += len;
  }
  return symbols;
}

}  // namespace

void tokenizer_state::encode_spm(std::string_view raw, bool space_prefix, std::vector<token_id>& out) const {
  const std::string text = escape_spaces(raw, space_prefix);
  std::vector<symbol> symbols = split_characters(text);
  std::priority_queue<bigram> queue;
  const auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t len = symbols[size_t(left)].len + symbols[size_t(right)].len;
    auto it = plain.find(std::string_view(text).substr(symbols[size_t(left)].offset, len));
    if (it != plain.end()) queue.push({spec.scores[size_t(it->second)], left, right, len});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add(int(i - 1), int(i));

  while (!queue.empty()) {
    const bigram b = queue.top();
    queue.pop();
    symbol& left = symbols[size_t(b.left)];
    symbol& right = symbols[size_t(b.right)];
    if (left.len == 0 || right.len == 0 || left.len + right.len != b.len) continue;  // stale
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[size_t(right.next)].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[size_t(i)].next) {
    const std::string_view piece =
        std::string_view(text).substr(symbols[size_t(i)].offset, symbols[size_t(i)].len);
    if (auto it = plain.find(piece); it != plain.end()) {
      out.push_back(it->second);
    } else {
      for (char c : piece) push_byte(static_cast<uint8_t>(c), out);
    }
  }
}

}  // namespace hearth
