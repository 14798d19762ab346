#include "core/kv_cache.hpp"

#include <algorithm>
#include <cassert>

#include "common/rng.hpp"

namespace hearth {

kv_cache::kv_cache(uint32_t n_blocks, uint32_t block_size) : block_size_(block_size), blocks_(n_blocks) {
  free_.reserve(n_blocks);
  // Handed out from the back: block 0 first, which keeps small tests readable.
  for (uint32_t b = n_blocks; b-- > 0;) free_.push_back(b);
}

std::optional<uint32_t> kv_cache::allocate() {
  uint32_t b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    b = lru_.front();
    uncache(b);
    ++evictions_;
  } else {
    return std::nullopt;
  }
  blocks_[b].refs = 1;
  ++used_;
  return b;
}

void kv_cache::release(uint32_t block) {
  block_state& s = blocks_[block];
  assert(s.refs > 0);
  if (--s.refs > 0) return;
  --used_;
  if (s.cached) {
    s.lru_pos = lru_.insert(lru_.end(), block);
  } else {
    free_.push_back(block);
  }
}

void kv_cache::release(std::span<const uint32_t> blocks) {
  // Last block first: cached blocks join the LRU tail first, so that a chain's head, which every
  // match starts from, is evicted last (head first left the rest of the chain unreachable while
  // it stayed cached), and free ones come back on the stack to be handed out in the table's order.
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) release(*b);
}

void kv_cache::take_ref(uint32_t block) {
  block_state& s = blocks_[block];
  if (s.refs++ == 0) {
    lru_.erase(s.lru_pos);  // only cached blocks are found, so an unreferenced one is in the LRU
    ++used_;
  }
}

void kv_cache::uncache(uint32_t block) {
  block_state& s = blocks_[block];
  if (s.refs == 0) lru_.erase(s.lru_pos);
  by_key_.erase(s.cached->key);
  s.cached.reset();
}

uint64_t kv_cache::key_of(uint64_t parent, uint64_t salt, std::span<const token_id> tokens) const {
  uint64_t state = parent ^ (salt * 0x9e3779b97f4a7c15ull);
  uint64_t h = splitmix64(state);
  for (token_id t : tokens) {
    state ^= h + static_cast<uint32_t>(t);
    h = splitmix64(state);
  }
  return h;
}

std::optional<uint32_t> kv_cache::find(uint64_t key, uint64_t parent, uint64_t salt,
                                       std::span<const token_id> tokens) const {
  const auto it = by_key_.find(key);
  if (it == by_key_.end()) return std::nullopt;
  const entry& e = *blocks_[it->second].cached;
  if (e.parent != parent || e.salt != salt || !std::ranges::equal(e.tokens, tokens)) return std::nullopt;
  return it->second;
}

kv_cache::prefix_match kv_cache::match_prefix(std::span<const token_id> tokens, uint64_t salt,
                                              uint32_t max_blocks) {
  prefix_match m;
  const size_t n_full = std::min<size_t>(max_blocks, tokens.size() / block_size_);
  for (size_t i = 0; i < n_full; ++i) {
    const auto chunk = tokens.subspan(i * block_size_, block_size_);
    const uint64_t key = key_of(m.last_key, salt, chunk);
    ++lookups_;
    const auto b = find(key, m.last_key, salt, chunk);
    if (!b) break;
    ++hits_;
    take_ref(*b);
    m.blocks.push_back(*b);
    m.last_key = key;
  }
  return m;
}

uint32_t kv_cache::cached_prefix(std::span<const token_id> tokens, uint64_t salt, uint32_t max_blocks) const {
  const size_t n_full = std::min<size_t>(max_blocks, tokens.size() / block_size_);
  uint64_t parent = root_key;
  uint32_t n = 0;
  for (; n < n_full; ++n) {
    const auto chunk = tokens.subspan(n * size_t{block_size_}, block_size_);
    const uint64_t key = key_of(parent, salt, chunk);
    if (!find(key, parent, salt, chunk)) break;
    parent = key;
  }
  return n;
}

uint64_t kv_cache::offer(uint32_t block, uint64_t parent, uint64_t salt, std::span<const token_id> tokens) {
  assert(tokens.size() == block_size_);
  const uint64_t key = key_of(parent, salt, tokens);
  block_state& s = blocks_[block];
  if (!s.cached && !by_key_.contains(key)) {
    s.cached = entry{key, parent, salt, {tokens.begin(), tokens.end()}};
    by_key_.emplace(key, block);
  }
  return key;
}

kv_cache_stats kv_cache::stats() const {
  return {n_blocks(), used_, static_cast<uint32_t>(lru_.size()), hits_, lookups_, evictions_};
}

}  // namespace hearth
