#pragma once
// The paged KV cache in host memory (kernels/kv_store.hpp gives the block layout): the CPU
// backends' pool, read and written in place by their kernels.

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>

#include "common/result.hpp"
#include "kernels/big_alloc.hpp"
#include "kernels/kv_store.hpp"

namespace hearth {

class kv_pool final : public kv_store {
 public:
  //! A pool of n_blocks blocks (64-byte aligned, zeroed); errc::invalid_argument for an empty
  //! layout, errc::limit_exceeded when the size overflows or cannot be allocated.
  static result<kv_pool> create(const kv_layout& layout, uint32_t n_blocks);
  kv_pool(kv_pool&&) = default;
  //! Not assignable: the old buffer would be freed while its populating thread still ran.
  kv_pool& operator=(kv_pool&&) = delete;
  //! How many blocks fit in `bytes` / hold `tokens` positions.
  static uint32_t blocks_for_bytes(const kv_layout& layout, uint64_t bytes);
  static uint32_t blocks_for_tokens(const kv_layout& layout, uint64_t tokens);

  const kv_layout& layout() const override { return layout_; }
  uint32_t n_blocks() const override { return n_blocks_; }
  status<> read_blocks(std::span<const uint32_t> ids, std::span<std::byte> out) const override;
  status<> write_blocks(std::span<const uint32_t> ids, std::span<const std::byte> in) override;
  size_t size_bytes() const { return size_t{n_blocks_} * layout_.block_bytes(); }

  //! Keys (k = 0) or values (k = 1) of one head in one block: (block_size, head_dim) in dtype.
  std::byte* tile(uint32_t block, uint32_t layer, uint32_t kv, uint32_t head);
  const std::byte* tile(uint32_t block, uint32_t layer, uint32_t kv, uint32_t head) const;
  //! A whole block's bytes.
  std::span<std::byte> block(uint32_t block);
  std::span<const std::byte> block(uint32_t block) const;

 private:
  kv_pool(const kv_layout& layout, uint32_t n_blocks, big_buffer mem);

  kv_layout layout_;
  uint32_t n_blocks_;
  big_buffer mem_;
  //! Faults the pool in while the cores idle: until then a new sequence's blocks are fresh pages,
  //! each first write a fault (big_alloc.hpp). Declared after mem_, so stopped before it is freed.
  std::jthread populate_;
};

// Inline: the attention kernels ask for a tile per (block, head) they fold, where the call was 7 %
// of a decode step's attention.
inline const std::byte* kv_pool::tile(uint32_t block, uint32_t layer, uint32_t kv, uint32_t head) const {
  assert(block < n_blocks_ && "kv_pool::tile: block id out of range");
  assert(layer < layout_.n_layer && kv < 2 && head < layout_.n_head_kv &&
         "kv_pool::tile: index out of range");
  // block (n_layer, 2 [k, v], n_head_kv, block_size, head_dim)
  const size_t tile_index = (size_t{layer} * 2 + kv) * layout_.n_head_kv + head;
  return mem_.get() + size_t{block} * layout_.block_bytes() + tile_index * layout_.tile_bytes();
}

inline std::byte* kv_pool::tile(uint32_t block, uint32_t layer, uint32_t kv, uint32_t head) {
  return const_cast<std::byte*>(std::as_const(*this).tile(block, layer, kv, head));
}

//! The block count of a backend's pool: `tokens` positions, else `bytes`, else one sequence of
//! n_ctx positions. errc::invalid_argument naming `who` for a block size outside [1, 1024] or a
//! pool that would hold no block.
result<uint32_t> pool_blocks(const kv_layout& layout, uint64_t tokens, uint64_t bytes, uint32_t n_ctx,
                             const std::string& who);

}  // namespace hearth
