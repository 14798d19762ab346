#include "model/bpe_trainer.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <unordered_set>

namespace hearth {
namespace {

using symbol = uint32_t;   // token id: 0..255 single bytes, then one per merge
using pair_id = uint32_t;  // dense number of a distinct adjacent pair, in order of first sight
constexpr uint32_t none = UINT32_MAX;

// A pair of adjacent symbols packed as left << 32 | right.
uint64_t pair_key(symbol left, symbol right) {
  return (uint64_t{left} << 32) | right;
}
symbol key_left(uint64_t key) {
  return static_cast<symbol>(key >> 32);
}
symbol key_right(uint64_t key) {
  return static_cast<symbol>(key & 0xffffffffu);
}

// Open-addressing map from pair key to pair id (linear probing, power-of-two capacity): the
// trainer's hottest lookup, several times faster than std::unordered_map here.
class pair_index {
 public:
  pair_index() : slots_(1 << 16, {empty, 0}) {}

  //! The id of `key`, made `next_id` if new (then `added` is set).
  pair_id find_or_add(uint64_t key, pair_id next_id, bool& added) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    size_t i = home(key);
    while (slots_[i].key != key && slots_[i].key != empty) i = (i + 1) & (slots_.size() - 1);
    added = slots_[i].key == empty;
    if (added) {
      slots_[i] = {key, next_id};
      ++size_;
    }
    return slots_[i].id;
  }

 private:
  static constexpr uint64_t empty = UINT64_MAX;  // never a key: symbols stay below 2^32 - 1
  struct slot {
    uint64_t key;
    pair_id id;
  };

  size_t home(uint64_t key) const {
    const int bits = std::countr_zero(slots_.size());
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> (64 - bits));
  }

  void grow() {
    std::vector<slot> old(2 * slots_.size(), {empty, 0});
    old.swap(slots_);
    for (const slot& s : old) {
      if (s.key == empty) continue;
      size_t i = home(s.key);
      while (slots_[i].key != empty) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = s;
    }
  }

  std::vector<slot> slots_;
  size_t size_ = 0;
};

struct heap_entry {
  uint64_t count;  // the pair's count when pushed; stale once the count changes
  pair_id pair;
};

class trainer {
 public:
  explicit trainer(std::span<const std::pair<std::string, uint64_t>> pieces);
  std::vector<bpe_merge> run(size_t max_merges);

 private:
  pair_id pair_of(symbol left, symbol right);
  void count_initial_pairs();
  pair_id pop_best();
  void apply_merge(pair_id p, symbol merged);
  void merge_in_word(uint32_t w, symbol left, symbol right, symbol merged);
  void add(symbol left, symbol right, uint64_t n, uint32_t w);
  void subtract(symbol left, symbol right, uint64_t n);
  void push(uint64_t count, pair_id p);
  bool lower_priority(const heap_entry& x, const heap_entry& y) const;
  auto heap_order() const {
    return [this](const heap_entry& x, const heap_entry& y) { return lower_priority(x, y); };
  }

  std::vector<std::string> tokens_;  // bytes of each symbol
  std::unordered_set<std::string> token_set_;
  // Words (distinct pieces): symbols_[word_begin_[w] ..+ word_len_[w]], shrinking in place.
  std::vector<symbol> symbols_;
  std::vector<uint32_t> word_begin_, word_len_;
  std::vector<uint64_t> word_count_;
  // Per pair id: its key, count (occurrences weighted by word count), and the head of its list of
  // words in occurrences_. A list holds every word that ever had the pair (stale ones are skipped
  // on use); consecutive duplicates are not added.
  pair_index index_;
  std::vector<uint64_t> pair_key_, pair_count_;
  std::vector<uint32_t> pair_head_;
  std::vector<bool> pair_banned_;  // its concatenation is already a token
  struct occurrence {
    uint32_t word;
    uint32_t next;  // index in occurrences_, or none
  };
  std::vector<occurrence> occurrences_;
  // Lazy max-heap: every pair with count >= 2 has at least one entry whose count >= its own.
  std::vector<heap_entry> heap_;
  std::vector<pair_id> raised_;  // pairs whose count rose during the current merge
};

trainer::trainer(std::span<const std::pair<std::string, uint64_t>> pieces) {
  for (int b = 0; b < 256; ++b) {
    tokens_.emplace_back(1, static_cast<char>(b));
    token_set_.insert(tokens_.back());
  }
  for (const auto& [bytes, count] : pieces) {
    if (bytes.size() < 2 || count == 0) continue;  // a single byte has no pair to merge
    word_begin_.push_back(static_cast<uint32_t>(symbols_.size()));
    word_len_.push_back(static_cast<uint32_t>(bytes.size()));
    word_count_.push_back(count);
    for (const char c : bytes) symbols_.push_back(static_cast<unsigned char>(c));
  }
}

std::vector<bpe_merge> trainer::run(size_t max_merges) {
  std::vector<bpe_merge> merges;
  if (max_merges == 0) return merges;
  count_initial_pairs();
  while (merges.size() < max_merges) {
    const pair_id p = pop_best();
    if (p == none) break;
    const std::string& left = tokens_[key_left(pair_key_[p])];
    const std::string& right = tokens_[key_right(pair_key_[p])];
    std::string joined = left + right;
    if (!token_set_.insert(joined).second) {
      pair_banned_[p] = true;
      continue;
    }
    merges.push_back({left, right});
    const auto merged = static_cast<symbol>(tokens_.size());
    tokens_.push_back(std::move(joined));
    apply_merge(p, merged);
  }
  return merges;
}

pair_id trainer::pair_of(symbol left, symbol right) {
  const uint64_t key = pair_key(left, right);
  bool added = false;
  const pair_id p = index_.find_or_add(key, static_cast<pair_id>(pair_key_.size()), added);
  if (added) {
    pair_key_.push_back(key);
    pair_count_.push_back(0);
    pair_head_.push_back(none);
    pair_banned_.push_back(false);
  }
  return p;
}

void trainer::count_initial_pairs() {
  for (uint32_t w = 0; w < word_begin_.size(); ++w) {
    const symbol* s = &symbols_[word_begin_[w]];
    for (uint32_t i = 0; i + 1 < word_len_[w]; ++i) add(s[i], s[i + 1], word_count_[w], w);
  }
  raised_.clear();
  for (pair_id p = 0; p < pair_count_.size(); ++p) {
    if (pair_count_[p] >= 2) heap_.push_back({pair_count_[p], p});
  }
  std::make_heap(heap_.begin(), heap_.end(), heap_order());
}

// The valid entry with the highest priority (none when the heap runs dry), skipping stale and
// banned ones.
pair_id trainer::pop_best() {
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), heap_order());
    const heap_entry e = heap_.back();
    heap_.pop_back();
    const uint64_t count = pair_count_[e.pair];
    if (count < 2 || pair_banned_[e.pair]) continue;
    if (count == e.count) return e.pair;
    // Fell since pushed: re-queue at its true count. Rose: a newer entry already holds it.
    if (count < e.count) push(count, e.pair);
  }
  return none;
}

void trainer::apply_merge(pair_id p, symbol merged) {
  const symbol left = key_left(pair_key_[p]);
  const symbol right = key_right(pair_key_[p]);
  // Indices, not references: merge_in_word appends to occurrences_.
  for (uint32_t o = pair_head_[p]; o != none; o = occurrences_[o].next) {
    merge_in_word(occurrences_[o].word, left, right, merged);
  }
  pair_count_[p] = 0;
  pair_head_[p] = none;
  // Re-queue each pair that rose, once, at its final count.
  std::sort(raised_.begin(), raised_.end());
  raised_.erase(std::unique(raised_.begin(), raised_.end()), raised_.end());
  for (const pair_id r : raised_) {
    if (pair_count_[r] >= 2) push(pair_count_[r], r);
  }
  raised_.clear();
}

// Rewrites one word left to right. `s[out - 1]` is already rewritten, so in "abab" the second
// merge sees the first's result as its left neighbour and the counts stay exact.
void trainer::merge_in_word(uint32_t w, symbol left, symbol right, symbol merged) {
  symbol* s = &symbols_[word_begin_[w]];
  const uint32_t len = word_len_[w];
  const uint64_t n = word_count_[w];
  uint32_t out = 0;
  for (uint32_t i = 0; i < len;) {
    if (i + 1 < len && s[i] == left && s[i + 1] == right) {
      if (out > 0) {
        subtract(s[out - 1], left, n);
        add(s[out - 1], merged, n, w);
      }
      if (i + 2 < len) {
        subtract(right, s[i + 2], n);
        add(merged, s[i + 2], n, w);
      }
      s[out++] = merged;
      i += 2;
    } else {
      s[out++] = s[i++];
    }
  }
  word_len_[w] = out;
}

void trainer::add(symbol left, symbol right, uint64_t n, uint32_t w) {
  const pair_id p = pair_of(left, right);
  pair_count_[p] += n;
  const uint32_t head = pair_head_[p];
  if (head == none || occurrences_[head].word != w) {
    pair_head_[p] = static_cast<uint32_t>(occurrences_.size());
    occurrences_.push_back({w, head});
  }
  raised_.push_back(p);
}

void trainer::subtract(symbol left, symbol right, uint64_t n) {
  const pair_id p = pair_of(left, right);
  pair_count_[p] -= std::min(n, pair_count_[p]);
}

void trainer::push(uint64_t count, pair_id p) {
  heap_.push_back({count, p});
  std::push_heap(heap_.begin(), heap_.end(), heap_order());
}

// Higher count first; on a tie the pair whose (left, right) bytes sort first.
bool trainer::lower_priority(const heap_entry& x, const heap_entry& y) const {
  if (x.count != y.count) return x.count < y.count;
  if (x.pair == y.pair) return false;
  const uint64_t kx = pair_key_[x.pair], ky = pair_key_[y.pair];
  const int by_left = tokens_[key_left(kx)].compare(tokens_[key_left(ky)]);
  if (by_left != 0) return by_left > 0;
  return tokens_[key_right(kx)].compare(tokens_[key_right(ky)]) > 0;
}

}  // namespace

std::vector<bpe_merge> train_bpe(std::span<const std::pair<std::string, uint64_t>> pieces,
                                 size_t max_merges) {
  return trainer(pieces).run(max_merges);
}

}  // namespace hearth
