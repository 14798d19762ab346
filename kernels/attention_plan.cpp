#include "kernels/attention_plan.hpp"

#include <algorithm>
#include <cassert>

#include "kernels/parallel.hpp"

namespace hearth::ops {

namespace {

//! Query rows per work item: a prefill chunk's rows share each K/V tile read and converted (64
//! where it was 16: a profile of 256 rows at 1024 had spent a quarter of the time converting
//! tiles), and a long chunk still splits into enough items to keep every thread busy.
constexpr uint32_t rows_per_item = 64;

//! Key splitting: a (sequence, kv head, row chunk) gets one key range per min_blocks_per_range
//! blocks of context, at most max_ranges, so that the merge stays small next to a range's work
//! and a range's first block, which nothing prefetched, is one of many: at 4 blocks a range,
//! `small`'s 16 decode rows at context 256 read their K/V at 63-69 % of the triad, at 16 at
//! 80 % (attention_bench, AMD EPYC Zen 4, alternating; 1.12-1.26 x).
//! The split depends on the sequence alone, never on the rest of the batch or the thread count:
//! a sequence gets the same logits, to the bit, alone or batched, on any number of threads, and
//! the engine's greedy tokens do not change with load.
constexpr uint32_t min_blocks_per_range = 16;
constexpr uint32_t max_ranges = 8;
//! The same for an item of prefill rows, whose range each loads its queries, writes (acc, m, l)
//! and is merged: at 16 blocks a range that cost 8-15 % of a chunk deep in a long prompt (32 rows
//! at 2048, 256 at 1024, 512 at 3584; attention_bench's shapes, AMD EPYC Zen 4, 1 and 2 threads),
//! at 64 blocks as little as no split, and a long prompt's rows still spread over the threads.
constexpr uint32_t min_prefill_blocks_per_range = 64;

//! Kv heads per item of a decode row: all of them, so that the item reads each block's K tiles,
//! then its V tiles, as two contiguous runs (small: 24 KiB each, against 2 KiB per head), unless
//! that leaves fewer than two items per thread. Heads never change numerics (each is its own
//! softmax), so this may follow the thread count where the key split must not.
uint32_t decode_heads_per_item(uint32_t n_head_kv, size_t items_with_all_heads) {
  const size_t wanted = 2 * static_cast<size_t>(kernel_threads());
  if (items_with_all_heads >= wanted) return n_head_kv;
  const auto groups = static_cast<uint32_t>(
      std::min<size_t>(n_head_kv, (wanted + items_with_all_heads - 1) / items_with_all_heads));
  return (n_head_kv + groups - 1) / groups;
}

}  // namespace

attn_plan make_plan(const kv_layout& lay, uint32_t group, uint32_t window, std::span<const seq_rows> seqs) {
  attn_plan plan;
  for (uint32_t si = 0; si < seqs.size(); ++si) {
    const seq_rows& s = seqs[si];
    assert((s.n_rows == 0 || (uint64_t{s.start_pos} + s.n_rows - 1) / lay.block_size < s.blocks.size()) &&
           "paged_attention: block table too short");
    for (uint32_t row0 = 0; row0 < s.n_rows; row0 += rows_per_item) {
      const uint32_t n_rows = std::min(rows_per_item, s.n_rows - row0);
      const auto n_blocks = static_cast<uint32_t>(
          (uint64_t{s.start_pos} + row0 + n_rows + lay.block_size - 1) / lay.block_size);
      // Blocks before the first row's window hold no key any row of the chunk sees.
      const auto b0 =
          static_cast<uint32_t>(window_start(uint64_t{s.start_pos} + row0, window) / lay.block_size);
      const uint32_t per_range = n_rows > 1 ? min_prefill_blocks_per_range : min_blocks_per_range;
      const uint32_t ranges = std::clamp((n_blocks - b0) / per_range, 1u, max_ranges);
      const uint32_t per_item = n_rows == 1 ? decode_heads_per_item(lay.n_head_kv, seqs.size() * ranges) : 1;
      for (uint32_t h = 0; h < lay.n_head_kv; h += per_item) {
        const uint32_t n_heads = std::min(per_item, lay.n_head_kv - h);
        const size_t partial = size_t{n_heads} * n_rows * group * (lay.head_dim + 2);
        if (ranges > 1) plan.merges.emplace_back(static_cast<uint32_t>(plan.items.size()), ranges);
        for (uint32_t r = 0; r < ranges; ++r) {
          const uint32_t slot = ranges > 1 ? static_cast<uint32_t>(plan.partial_floats) : whole_keys;
          plan.items.push_back({si, h, n_heads, row0, n_rows, b0 + (n_blocks - b0) * r / ranges,
                                b0 + (n_blocks - b0) * (r + 1) / ranges, slot});
          if (ranges > 1) plan.partial_floats += partial;
        }
      }
    }
  }
  return plan;
}

}  // namespace hearth::ops
