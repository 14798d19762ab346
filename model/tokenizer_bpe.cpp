// Byte-level BPE encoding, as llama.cpp's llm_tokenizer_bpe: the pre-tokenizer splits the text into
// pieces; each piece starts as one symbol per byte (its GPT-2 alphabet token) and the adjacent pair
// with the lowest merge rank merges first (ties: leftmost), until no pair has a merge.
// Invalid UTF-8 is replaced before the split, so encoding such text is not reversible.

#include <queue>

#include "model/byte_unicode.hpp"
#include "model/tokenizer_impl.hpp"
#include "model/unicode.hpp"

namespace hearth {
namespace {

struct symbol {
  token_id id;     // no_token for a byte the vocabulary cannot spell (it never merges)
  int prev, next;  // neighbours in the list, -1 at the ends
  bool alive;
};

struct bigram {
  int32_t rank;
  int left, right;
  token_id left_id, right_id, result;  // ids when queued; a mismatch later means a side has changed

  bool operator<(const bigram& o) const {  // std::priority_queue pops the greatest: lowest rank, leftmost
    return rank > o.rank || (rank == o.rank && left > o.left);
  }
};

}  // namespace

void tokenizer_state::encode_bpe(std::string_view text, std::vector<token_id>& out) const {
  std::vector<symbol> symbols;
  std::priority_queue<bigram> queue;
  const auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const token_id l = symbols[size_t(left)].id, r = symbols[size_t(right)].id;
    if (l == no_token || r == no_token) return;
    auto it = merges.find(uint64_t(uint32_t(l)) << 32 | uint32_t(r));
    if (it != merges.end()) queue.push({it->second.rank, left, right, l, r, it->second.result});
  };

  // Invalid UTF-8 becomes U+FFFD first, as in llama.cpp (and as a Hugging Face tokenizer, which
  // takes only valid text, sees it after Python's decode with errors="replace").
  const std::string valid = llama_cpp_utf8(text);
  for (std::string_view piece : pretokenize(pre, valid)) {
    if (ignore_merges) {
      if (auto it = plain.find(bytes_to_bpe_text(piece)); it != plain.end()) {
        out.push_back(it->second);
        continue;
      }
    }
    symbols.clear();
    for (size_t i = 0; i < piece.size(); ++i) {
      const int index = static_cast<int>(i);
      symbols.push_back({byte_token[static_cast<uint8_t>(piece[i])], index - 1,
                         i + 1 == piece.size() ? -1 : index + 1, true});
    }
    for (size_t i = 1; i < symbols.size(); ++i) try_add(int(i - 1), int(i));

    while (!queue.empty()) {
      const bigram b = queue.top();
      queue.pop();
      symbol& left = symbols[size_t(b.left)];
      symbol& right = symbols[size_t(b.right)];
      if (!left.alive || !right.alive || left.next != b.right || left.id != b.left_id ||
          right.id != b.right_id) {
        continue;  // stale
      }
      left.id = b.result;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0) symbols[size_t(right.next)].prev = b.left;
      try_add(left.prev, b.left);
      try_add(b.left, left.next);
    }

    for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[size_t(i)].next) {
      const token_id id = symbols[size_t(i)].id;
      if (id != no_token)
        out.push_back(id);
      else if (spec.unk != no_token)
        out.push_back(spec.unk);  // a byte with no token
    }
  }
}

}  // namespace hearth
