#pragma once
// How ops::paged_attention divides a call into work items, internal to kernels/
// (paged_attention.cpp folds them): a sequence's chunk of query rows, a run of its kv heads, a
// range of its keys.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "kernels/cpu_ops.hpp"
#include "kernels/kv_store.hpp"

namespace hearth::ops {

inline constexpr uint32_t whole_keys = UINT32_MAX;  // attn_item::partial of an item that is not split

//! Query rows [row0, row0 + n_rows) of sequence `seq`, with all query heads of kv heads
//! [head0, head0 + n_heads), against the keys of blocks [block0, block1) of its table. `partial`
//! is where its (acc, m, l) go in attn_call::partials when the keys are split, else whole_keys
//! (it writes the output). Query (head h of the item, row i, head g of the group) is
//! (h * n_rows + i) * group + g in the item's buffers.
struct attn_item {
  uint32_t seq;
  uint32_t head0, n_heads;
  uint32_t row0;
  uint32_t n_rows;
  uint32_t block0, block1;
  uint32_t partial;
};

//! The work of one call: items, and for each split (sequence, kv head, row chunk) where its
//! consecutive items start and how many there are.
struct attn_plan {
  std::vector<attn_item> items;
  std::vector<std::pair<uint32_t, uint32_t>> merges;
  size_t partial_floats = 0;
};

//! The first key position a row at `pos` sees: pos + 1 - window under a sliding window, else 0.
inline uint64_t window_start(uint64_t pos, uint32_t window) {
  return window != 0 && pos + 1 > window ? pos + 1 - window : 0;
}

//! The items of one paged_attention call: a decode row's with all its kv heads (fewer only
//! when they would not keep the threads busy), a prefill chunk's rows_per_item rows a kv head;
//! the keys split into ranges when there are too few items, by the sequence alone.
attn_plan make_plan(const kv_layout& lay, uint32_t group, uint32_t window, std::span<const seq_rows> seqs);

}  // namespace hearth::ops
