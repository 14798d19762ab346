#pragma once
// The paged KV cache's storage as every backend sees it: a pool of fixed-size blocks, each holding
// keys and values of `block_size` consecutive positions of one sequence for every layer. Which
// block belongs to which sequence is the KV block manager's business (core/kv_cache.hpp); a store
// only keeps bytes, in host memory (kv_pool) or a device's (kernels/cuda).
//
// One block, contiguous, so handing a block to another worker, NUMA node or device is one copy:
//   block (n_layer, 2 [k, v], n_head_kv, block_size, head_dim) in `dtype`
// A sequence's block table maps position p to block table[p / block_size], slot p % block_size.

#include <cstddef>
#include <cstdint>
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

//! Where a backend's KV blocks live. Blocks move between stores only whole, through host memory:
//! the handoff of a prefill worker's blocks to a decode worker with a pool of its own.
class kv_store {
 public:
  virtual ~kv_store() = default;

  virtual const kv_layout& layout() const = 0;
  virtual uint32_t n_blocks() const = 0;
  //! Copies blocks ids[i] to out[i * block_bytes, (i + 1) * block_bytes). May run on another
  //! thread than the owner's forward, for blocks that forward does not write.
  //! errc::invalid_argument for a block outside the store or `out` of another size.
  virtual status<> read_blocks(std::span<const uint32_t> ids, std::span<std::byte> out) const = 0;
  //! The reverse: `in` (ids.size() blocks back to back) into blocks ids.
  virtual status<> write_blocks(std::span<const uint32_t> ids, std::span<const std::byte> in) = 0;

 protected:
  kv_store() = default;
  kv_store(const kv_store&) = default;
  kv_store(kv_store&&) = default;
  kv_store& operator=(const kv_store&) = default;
  kv_store& operator=(kv_store&&) = default;
};

//! The check both directions of a block copy make: every id inside a store of n_blocks, and
//! `bytes` exactly ids.size() blocks.
status<> check_block_copy(const kv_layout& layout, uint32_t n_blocks, std::span<const uint32_t> ids,
                          size_t bytes);

}  // namespace hearth
