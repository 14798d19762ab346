#pragma once
// Which KV block belongs to whom: reference counts over the pool's block ids, and the prefix
// cache. The bytes live in kernels/kv_pool; this class only hands out ids. Owned by the
// scheduler, which allocates while it plans a step (docs/architecture.md says why it is not an
// actor of its own).
//
// Prefix cache: a full block is keyed by a chained hash of (parent block's key, tenant salt, its
// tokens), so a block matches only when the whole prefix before it matches too. A lookup also
// compares the stored salt, parent key and tokens, so a 64-bit hash collision can never hand a
// sequence another prefix's keys and values. A cached block whose last reference goes stays
// cached (evictable, least recently used first) until the pool needs it.

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "model/vocab.hpp"

namespace hearth {

struct kv_cache_stats {
  uint32_t n_blocks = 0;
  uint32_t used = 0;       //!< referenced by at least one sequence
  uint32_t cached = 0;     //!< unreferenced but holding a cached prefix (evictable)
  uint64_t hits = 0;       //!< blocks found in the prefix cache
  uint64_t lookups = 0;    //!< full blocks looked up
  uint64_t evictions = 0;  //!< cached blocks reused for other data
};

class kv_cache {
 public:
  explicit kv_cache(uint32_t n_blocks, uint32_t block_size);

  uint32_t block_size() const { return block_size_; }
  uint32_t n_blocks() const { return static_cast<uint32_t>(blocks_.size()); }
  //! Blocks an allocation can get now: free ones plus evictable cached ones.
  uint32_t available() const { return static_cast<uint32_t>(free_.size() + lru_.size()); }

  //! A block with one reference, or nothing when the pool is exhausted. Takes free blocks first,
  //! then evicts the least recently used cached one.
  std::optional<uint32_t> allocate();
  //! Drops one reference; at zero the block becomes free, or evictable if it is cached.
  void release(uint32_t block);
  void release(std::span<const uint32_t> blocks);

  //! The key of the chain's root: what the first block of every sequence chains from.
  static constexpr uint64_t root_key = 0;

  struct prefix_match {
    std::vector<uint32_t> blocks;  //!< each gained a reference
    uint64_t last_key = root_key;  //!< key of the last block found, to chain on from
  };
  //! The longest run of cached full blocks that starts `tokens`, at most max_blocks. Counts
  //! lookups and hits.
  prefix_match match_prefix(std::span<const token_id> tokens, uint64_t salt, uint32_t max_blocks);
  //! How many blocks match_prefix would find now, touching nothing (where a request would go).
  uint32_t cached_prefix(std::span<const token_id> tokens, uint64_t salt, uint32_t max_blocks) const;
  //! Offers a full block (its block_size tokens, chained from `parent`) to the prefix cache and
  //! returns its key. A block whose key is already cached under another id stays private.
  uint64_t offer(uint32_t block, uint64_t parent, uint64_t salt, std::span<const token_id> tokens);

  kv_cache_stats stats() const;

 private:
  struct entry {
    uint64_t key = 0;
    uint64_t parent = 0;
    uint64_t salt = 0;
    std::vector<token_id> tokens;
  };
  struct block_state {
    uint32_t refs = 0;
    std::optional<entry> cached;
    std::list<uint32_t>::iterator lru_pos;  // valid while refs == 0 and cached
  };

  uint64_t key_of(uint64_t parent, uint64_t salt, std::span<const token_id> tokens) const;
  std::optional<uint32_t> find(uint64_t key, uint64_t parent, uint64_t salt,
                               std::span<const token_id> tokens) const;
  void take_ref(uint32_t block);
  void uncache(uint32_t block);

  uint32_t block_size_;
  std::vector<block_state> blocks_;
  std::vector<uint32_t> free_;                     // unreferenced, not cached
  std::list<uint32_t> lru_;                        // unreferenced, cached; front = oldest
  std::unordered_map<uint64_t, uint32_t> by_key_;  // cached key -> block
  uint32_t used_ = 0;
  uint64_t hits_ = 0, lookups_ = 0, evictions_ = 0;
};

}  // namespace hearth
