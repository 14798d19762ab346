#include "kernels/kv_pool.hpp"

#include <cassert>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "common/checked.hpp"
#include "kernels/big_alloc.hpp"

namespace hearth {

namespace {

constexpr size_t pool_alignment = 64;  // a cache line: tiles of one block never share one with another block

//! layout.block_bytes() without wrapping, or nullopt when it does not fit 64 bits.
std::optional<uint64_t> checked_block_bytes(const kv_layout& layout) {
  auto tile = checked_mul(uint64_t{layout.block_size} * layout.head_dim, layout.elem_bytes());
  if (!tile) return std::nullopt;
  auto heads = checked_mul(*tile, uint64_t{layout.n_head_kv} * 2);
  if (!heads) return std::nullopt;
  return checked_mul(*heads, layout.n_layer);
}

bool empty_layout(const kv_layout& layout) {
  return layout.n_layer == 0 || layout.n_head_kv == 0 || layout.head_dim == 0 || layout.block_size == 0;
}

}  // namespace

kv_pool::kv_pool(const kv_layout& layout, uint32_t n_blocks, big_buffer mem)
    : layout_(layout),
      n_blocks_(n_blocks),
      mem_(std::move(mem)),
      populate_(populate_in_background(mem_.get(), mem_.get_deleter().bytes)) {}

result<kv_pool> kv_pool::create(const kv_layout& layout, uint32_t n_blocks) {
  if (empty_layout(layout)) {
    return error{errc::invalid_argument, "kv pool: n_layer, n_head_kv, head_dim and block_size must be > 0"};
  }
  auto block = checked_block_bytes(layout);
  auto total = block ? checked_mul(*block, n_blocks) : std::nullopt;
  auto padded = total ? checked_align_up(*total, pool_alignment) : std::nullopt;
  // Beyond PTRDIFF_MAX no allocator succeeds and pointer differences inside the pool break.
  if (!padded || *padded > static_cast<uint64_t>(std::numeric_limits<ptrdiff_t>::max())) {
    return error{errc::limit_exceeded,
                 "kv pool: " + std::to_string(n_blocks) + " blocks overflow the address space"};
  }
  big_buffer mem;
  if (*padded > 0) {
    mem = alloc_zeroed_big(*padded);
    if (!mem) {
      return error{errc::limit_exceeded, "kv pool: cannot allocate " + std::to_string(*padded) + " bytes"};
    }
  }
  return kv_pool(layout, n_blocks, std::move(mem));
}

uint32_t kv_pool::blocks_for_bytes(const kv_layout& layout, uint64_t bytes) {
  auto block = empty_layout(layout) ? std::nullopt : checked_block_bytes(layout);
  if (!block) return 0;  // nothing fits: an empty layout, or one block larger than any memory
  const uint64_t n = bytes / *block;
  return n > std::numeric_limits<uint32_t>::max() ? std::numeric_limits<uint32_t>::max()
                                                  : static_cast<uint32_t>(n);
}

uint32_t kv_pool::blocks_for_tokens(const kv_layout& layout, uint64_t tokens) {
  if (layout.block_size == 0) return 0;
  const uint64_t n = tokens / layout.block_size + (tokens % layout.block_size != 0 ? 1 : 0);
  // Saturates: a pool never has 2^32 blocks, so the caller's allocation fails as it should.
  return n > std::numeric_limits<uint32_t>::max() ? std::numeric_limits<uint32_t>::max()
                                                  : static_cast<uint32_t>(n);
}

std::span<const std::byte> kv_pool::block(uint32_t block) const {
  assert(block < n_blocks_ && "kv_pool::block: block id out of range");
  return {mem_.get() + size_t{block} * layout_.block_bytes(), layout_.block_bytes()};
}

std::span<std::byte> kv_pool::block(uint32_t block) {
  const auto b = std::as_const(*this).block(block);
  return {const_cast<std::byte*>(b.data()), b.size()};
}

status<> check_block_copy(const kv_layout& layout, uint32_t n_blocks, std::span<const uint32_t> ids,
                          size_t bytes) {
  for (uint32_t b : ids) {
    if (b >= n_blocks) {
      return error{errc::invalid_argument, "kv store: block " + std::to_string(b) + " outside the pool of " +
                                               std::to_string(n_blocks)};
    }
  }
  if (bytes != ids.size() * layout.block_bytes()) {
    return error{errc::invalid_argument, "kv store: " + std::to_string(bytes) + " bytes for " +
                                             std::to_string(ids.size()) + " blocks of " +
                                             std::to_string(layout.block_bytes())};
  }
  return {};
}

status<> kv_pool::read_blocks(std::span<const uint32_t> ids, std::span<std::byte> out) const {
  if (auto st = check_block_copy(layout_, n_blocks_, ids, out.size()); !st) return st;
  const size_t n = layout_.block_bytes();
  for (size_t i = 0; i < ids.size(); ++i) std::memcpy(out.data() + i * n, block(ids[i]).data(), n);
  return {};
}

status<> kv_pool::write_blocks(std::span<const uint32_t> ids, std::span<const std::byte> in) {
  if (auto st = check_block_copy(layout_, n_blocks_, ids, in.size()); !st) return st;
  const size_t n = layout_.block_bytes();
  for (size_t i = 0; i < ids.size(); ++i) std::memcpy(block(ids[i]).data(), in.data() + i * n, n);
  return {};
}

result<uint32_t> pool_blocks(const kv_layout& layout, uint64_t tokens, uint64_t bytes, uint32_t n_ctx,
                             const std::string& who) {
  if (layout.block_size == 0 || layout.block_size > 1024) {
    return error{errc::invalid_argument, who + ": block_size must be in [1, 1024]"};
  }
  const uint32_t n = tokens  ? kv_pool::blocks_for_tokens(layout, tokens)
                     : bytes ? kv_pool::blocks_for_bytes(layout, bytes)
                             : kv_pool::blocks_for_tokens(layout, n_ctx);
  if (n == 0) return error{errc::invalid_argument, who + ": the KV pool would hold no block"};
  return n;
}

}  // namespace hearth
