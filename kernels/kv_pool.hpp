#pragma once
// The paged KV cache's storage: a pool of fixed-size blocks, each holding keys and values of
// `block_size` consecutive positions of one sequence for every layer. Which block belongs to
// which sequence is the KV block manager's business (core/kv_cache.hpp); the pool only stores bytes.
//
// One block, contiguous, so handing a block to another worker or NUMA node is one copy:
//   block (n_layer, 2 [k, v], n_head_kv, block_size, head_dim) in `dtype`
// A sequence's block table maps position p to block table[p / block_size], slot p % block_size.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "common/result.hpp"

namespace hearth {

enum class kv_dtype { f32, bf16 };
//! "f32" or "bf16".
inline const char* to_string(kv_dtype t) {
  return t == kv_dtype::f32 ? "f32" : "bf16";
}

struct kv_layout {
  uint32_t n_layer = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;
  uint32_t block_size = 16;  //!< positions per block
  kv_dtype dtype = kv_dtype::bf16;

  size_t elem_bytes() const { return dtype == kv_dtype::f32 ? 4 : 2; }
  //! Bytes of one (block_size, head_dim) tile: one head's keys or values in one block.
  size_t tile_bytes() const { return size_t{block_size} * head_dim * elem_bytes(); }
  size_t block_bytes() const { return tile_bytes() * n_head_kv * 2 * n_layer; }
};

class kv_pool {
 public:
  //! A pool of n_blocks blocks (64-byte aligned, zeroed); errc::invalid_argument for an empty
  //! layout, errc::limit_exceeded when the size overflows or cannot be allocated.
  static result<kv_pool> create(const kv_layout& layout, uint32_t n_blocks);
  //! How many blocks fit in `bytes` / hold `tokens` positions.
  static uint32_t blocks_for_bytes(const kv_layout& layout, uint64_t bytes);
  static uint32_t blocks_for_tokens(const kv_layout& layout, uint64_t tokens);

  const kv_layout& layout() const { return layout_; }
  uint32_t n_blocks() const { return n_blocks_; }
  size_t size_bytes() const { return size_t{n_blocks_} * layout_.block_bytes(); }

  //! Keys (k = 0) or values (k = 1) of one head in one block: (block_size, head_dim) in dtype.
  std::byte* tile(uint32_t block, uint32_t layer, uint32_t kv, uint32_t head);
  const std::byte* tile(uint32_t block, uint32_t layer, uint32_t kv, uint32_t head) const;
  //! A whole block's bytes.
  std::span<std::byte> block(uint32_t block);
  std::span<const std::byte> block(uint32_t block) const;

 private:
  kv_pool(const kv_layout& layout, uint32_t n_blocks, std::unique_ptr<std::byte[], void (*)(std::byte*)> mem);

  kv_layout layout_;
  uint32_t n_blocks_;
  std::unique_ptr<std::byte[], void (*)(std::byte*)> mem_;
};

}  // namespace hearth
