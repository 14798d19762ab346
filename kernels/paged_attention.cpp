// ops::paged_attention: causal attention over the paged KV cache, flash-attention style. Each work
// item takes one sequence's chunk of query rows and all query heads of one or more kv heads
// (GQA), walks its range of the sequence's block table once, and folds every K/V tile into each
// query's running softmax (max m, sum l, weighted values acc). So a step streams each K/V tile
// once per kv head. When a batch has too few items to keep every thread busy (one sequence,
// few kv heads), items split the keys into ranges; each range's (m, l, acc) is merged after.
//
// A decode row's item takes every kv head (fewer only when the items would not keep the threads
// busy): per block it reads the heads' K tiles, then their V tiles, each a contiguous run the
// hardware prefetcher follows (small: 24 KiB, against 2 KiB per head). Small at context 1024, 2
// threads, 12 layers: 4.8 -> 3.0 ms of attention per decode step. The prefetcher stops at each
// block's end, and the next block is elsewhere in the pool: so as it folds a head's tiles, an item
// asks for the tiles it folds next, a few KiB ahead (a block of all heads ahead was slower:
// performance.md, Kernels and memory).
//
// An item of prefill rows with more than 4 queries folds tiles of 4 blocks (64 keys) into 4
// queries at a time against the K tiles transposed (attention_tile.hpp), in items of 64 rows:
// 1.25-1.47 x faster than one 16-key block per fold in items of 16 rows (small's heads, 32-256
// rows at 0-3072). Decode rows read bf16 tiles in place, in tile order; the output is put back
// in order once per item.
//
// Where the CPU has vdpbf16ps and the caller allows it (attn_params::in_bf16), a prefill
// item's tiles of a bf16 pool fold in bf16 instead (attention_bf16.hpp), and it asks for the next
// tile's blocks into L2 as it folds one (which did nothing for the f32 folds, bound by their
// FMAs). attention_bench's prefill lines, small's heads, AMD EPYC Zen 4, two threads: 1.6-2.1 x
// the f32 folds. A decode row's blocks fold in bf16 too, read in place, up to 64 keys at a time
// (decode_fold_keys): one vdpbf16ps per key and 32 elements for the scores, the values' rows
// paired in registers. attention_bench's decode lines, same machine: Llama-3-8B's heads 1.5-1.6 x
// (33 -> 53 % of the triad), small's 16 rows at 256 1.4 x.

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/attention_bf16.hpp"
#include "kernels/attention_plan.hpp"
#include "kernels/attention_tile.hpp"
#include "kernels/cpu_ops.hpp"
#include "kernels/parallel.hpp"

namespace hearth::ops {

namespace {

using namespace attention_tile;

//! Keys per fold on the prefill path: whole blocks, about 64 keys in f32 and 128 in bf16. A fold
//! pays a fixed cost (each query's max, correction, and a pass over its accumulators) that 16-key
//! blocks paid four times as often. bf16 tiles of 128 keys against 64: prefill attention at
//! 1.05-1.14 x the rate (chunks of 256 rows at 1024 and 512 at 0 and 1536, small's and 1b's
//! heads, 1 and 2 threads, AMD EPYC Zen 5).
constexpr uint32_t prefill_blocks_per_tile(uint32_t block_size, bool bf16) {
  return std::max(1u, (bf16 ? 128 : 64) / block_size);
}
constexpr uint32_t prefill_tile_keys(uint32_t block_size, bool bf16) {
  return block_size * prefill_blocks_per_tile(block_size, bf16);
}
constexpr uint32_t max_tile_blocks = 128;  // blocks of one key each

//! What all items of one call share.
struct attn_call {
  const kv_pool& pool;
  uint32_t layer;
  uint32_t group;   // query heads per kv head
  float scale;      // multiplies q.k: 1 / sqrt(head_dim) unless the model says otherwise
  float softcap;    // scores c tanh(s / c) when > 0
  uint32_t window;  // a row at p sees keys from window_start(p, window)
  row_view<const float> q;
  row_view<float> out;
  std::span<const seq_rows> seqs;
  float* partials;   // per split item: acc (nq, head_dim), m (nq,), l (nq,)
  bool bf16_tiles;   // prefill tiles fold in bf16 (attention_bf16.hpp)
  bool bf16_blocks;  // so do decode rows' blocks, read in place (attention_bf16::fold_in_place)
};

//! One thread's buffers, kept across calls so that a decode step allocates nothing.
struct attn_scratch {
  std::vector<float> q;    // (nq, head_dim) the item's queries, times scale, in tile order
  std::vector<float> acc;  // (nq, head_dim) running sum of weight * v, in tile order
  std::vector<float> m;    // (nq,) running max score
  std::vector<float> l;    // (nq,) running sum of exp(score - m)
  std::vector<float> p;    // (4, tile keys) scores, then weights, of the queries being folded
  std::vector<float> k;    // (block_size, head_dim) current K tile in f32, when converted
  std::vector<float> v;    // (tile keys, head_dim) current V tile(s) in f32, when converted
  std::vector<float> kt;   // (head_dim, tile keys) current K tiles transposed, for many queries
  // bf16 tiles: the queries rounded, the tile packed, its scores and weights, each query's keys
  std::vector<uint16_t> qb, pb;
  std::vector<uint32_t> kp, vp, from, seen;
  std::vector<float> s;

  void prepare(uint32_t nq, uint32_t hd, uint32_t bs) {
    const uint32_t keys = prefill_tile_keys(bs, false);
    q.resize(size_t{nq} * hd);
    acc.assign(size_t{nq} * hd, 0.0f);
    m.assign(nq, -std::numeric_limits<float>::infinity());
    l.assign(nq, 0.0f);
    p.resize(size_t{max_queries_per_fold} * keys);
    k.resize(size_t{bs} * hd);
    v.resize(size_t{keys} * hd);
    kt.resize(size_t{hd} * keys);
  }

  void prepare_bf16(uint32_t nq, uint32_t hd, uint32_t bs) {
    const uint32_t keys = prefill_tile_keys(bs, true), padded = (keys + 15) / 16 * 16;
    qb.resize(size_t{nq} * hd);
    kp.resize(size_t{hd} / 2 * padded);
    vp.resize(size_t{(keys + 1) / 2} * hd);
    s.resize(size_t{4} * padded);
    pb.resize(s.size());
    from.resize(nq);
    seen.resize(nq);
  }
};

//! The first n rows of a head's K (kv = 0) or V (kv = 1) tile in one block, as f32 into dst.
HEARTH_SIMD_INLINE void tile_to_f32(const kv_pool& pool, uint32_t block, uint32_t layer, uint32_t kv,
                                    uint32_t head, uint32_t n, float* dst) {
  const std::byte* t = pool.tile(block, layer, kv, head);
  const size_t count = size_t{n} * pool.layout().head_dim;
  if (pool.layout().dtype == kv_dtype::f32) {
    std::memcpy(dst, t, count * sizeof(float));
    return;
  }
  const auto* src = reinterpret_cast<const uint16_t*>(t);
  for (size_t i = 0; i < count; ++i) dst[i] = simd::bf16_to_f32(src[i]);
}

//! The first n rows of a head's tile (block_size, head_dim) of keys (kv = 0) or values (kv = 1)
//! in one block, as E reads them: the pool's own bytes, or a bf16 tile converted into buf.
template <class E>
HEARTH_SIMD_INLINE const typename E::type* tile_as(const kv_pool& pool, uint32_t block, uint32_t layer,
                                                   uint32_t kv, uint32_t head, uint32_t n,
                                                   std::vector<float>& buf) {
  if (std::is_same_v<E, bf16_elems> || pool.layout().dtype == kv_dtype::f32)
    return reinterpret_cast<const typename E::type*>(pool.tile(block, layer, kv, head));
  tile_to_f32(pool, block, layer, kv, head, n, buf.data());
  return reinterpret_cast<const typename E::type*>(buf.data());
}

//! fold_tile over queries [q0, q1) of the item, max_queries_per_fold at a time.
template <class E>
HEARTH_SIMD_INLINE void fold_queries(attn_scratch& w, uint32_t q0, uint32_t q1, const typename E::type* k,
                                     const typename E::type* v, uint32_t n, uint32_t hd, uint32_t bs,
                                     float softcap) {
  for (uint32_t qi = q0; qi < q1; qi += max_queries_per_fold) {
    float* q = w.q.data() + size_t{qi} * hd;
    float* acc = w.acc.data() + size_t{qi} * hd;
    float* m = w.m.data() + qi;
    float* l = w.l.data() + qi;
    switch (std::min(max_queries_per_fold, q1 - qi)) {
      case 4:
        fold_tile<E, 4>(q, k, v, n, hd, m, l, acc, w.p.data(), bs, softcap);
        break;
      case 3:
        fold_tile<E, 3>(q, k, v, n, hd, m, l, acc, w.p.data(), bs, softcap);
        break;
      case 2:
        fold_tile<E, 2>(q, k, v, n, hd, m, l, acc, w.p.data(), bs, softcap);
        break;
      default:
        fold_tile<E, 1>(q, k, v, n, hd, m, l, acc, w.p.data(), bs, softcap);
        break;
    }
  }
}

//! The item's queries (attn_item) times scale into q, each in tile order.
template <class E>
HEARTH_SIMD_INLINE void load_queries(const attn_call& c, const attn_item& it, float* q) {
  const uint32_t hd = c.pool.layout().head_dim;
  const seq_rows& s = c.seqs[it.seq];
  for (uint32_t h = 0; h < it.n_heads; ++h) {
    for (uint32_t i = 0; i < it.n_rows; ++i) {
      // The group's query heads are adjacent in the row: heads kv_head * group .. + group - 1.
      const float* src = c.q.row(s.first_row + it.row0 + i) + size_t{it.head0 + h} * c.group * hd;
      float* dst = q + size_t{h * it.n_rows + i} * c.group * hd;
      for (uint32_t g = 0; g < c.group; ++g)
        for (uint32_t d = 0; d < hd; ++d)
          dst[size_t{g} * hd + tile_index<E>(d, hd)] = src[size_t{g} * hd + d] * c.scale;
    }
  }
}

//! out rows of the item = acc (nq, hd) in tile order / l (nq,).
template <class E>
HEARTH_SIMD_INLINE void write_output(const attn_call& c, const attn_item& it, const float* acc,
                                     const float* l) {
  const uint32_t hd = c.pool.layout().head_dim;
  const seq_rows& s = c.seqs[it.seq];
  for (uint32_t h = 0; h < it.n_heads; ++h) {
    for (uint32_t i = 0; i < it.n_rows; ++i) {
      float* dst = c.out.row(s.first_row + it.row0 + i) + size_t{it.head0 + h} * c.group * hd;
      for (uint32_t g = 0; g < c.group; ++g) {
        const uint32_t qi = (h * it.n_rows + i) * c.group + g;
        const float inv_l = 1.0f / l[qi];  // l >= 1: the max score's own term is e^0
        for (uint32_t d = 0; d < hd; ++d)
          dst[size_t{g} * hd + d] = acc[size_t{qi} * hd + tile_index<E>(d, hd)] * inv_l;
      }
    }
  }
}

//! Where one kv head's work on a run of the item's blocks starts: its queries from q0 in the
//! item's buffers, blocks [b, b + n_blocks) of the sequence's table, keys [base, base + n_keys).
struct head_blocks {
  uint32_t kv_head;
  uint32_t q0;
  uint32_t b, n_blocks;
  uint64_t base;
  uint32_t n_keys;
};

//! One kv head's K and V tiles of a block, into L1 (Locality 3) or L2 (2). A decode row asks for
//! the tiles it folds next into L1 while it folds these: into L1 rather than L2, `small`'s
//! batch-16 step took 0.91-0.99 x the time (AMD EPYC Zen 5; not measured with a 32 KiB L1).
template <int Locality>
HEARTH_SIMD_INLINE void prefetch_tiles(const attn_call& c, uint32_t block, uint32_t head) {
  const kv_layout& lay = c.pool.layout();
  const size_t bytes = size_t{lay.block_size} * lay.head_dim * (lay.dtype == kv_dtype::f32 ? 4 : 2);
  for (uint32_t kv = 0; kv < 2; ++kv) {
    const std::byte* t = c.pool.tile(block, c.layer, kv, head);
    for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(t + o, 0, Locality);
  }
}

//! Into L2, the tiles of the prefill tile after hb's, while hb's folds run: each block is elsewhere
//! in the pool, where the hardware prefetcher does not follow.
HEARTH_SIMD_INLINE void prefetch_next_tile(const attn_call& c, const attn_item& it, const head_blocks& hb) {
  const uint32_t end = std::min(it.block1, hb.b + 2 * hb.n_blocks);
  for (uint32_t b = hb.b + hb.n_blocks; b < end; ++b)
    prefetch_tiles<2>(c, c.seqs[it.seq].blocks[b], hb.kv_head);
}

//! The keys [from, seen) of tile hb that query qi of the item sees: the causal mask on the
//! diagonal tile, a sliding window's start on the oldest.
HEARTH_SIMD_INLINE void visible_keys(const attn_call& c, const head_blocks& hb, uint64_t first_pos,
                                     uint32_t qi, uint32_t& from, uint32_t& seen) {
  const uint64_t pos = first_pos + (qi - hb.q0) / c.group;
  seen = static_cast<uint32_t>(std::min<uint64_t>(hb.n_keys, pos - hb.base + 1));
  const uint64_t lo = window_start(pos, c.window);
  from = static_cast<uint32_t>(lo > hb.base ? std::min<uint64_t>(hb.n_keys, lo - hb.base) : 0);
}

//! Keys a decode row folds at once in bf16 (whole blocks of 16-key chunks): a fold's fixed cost
//! (each query's max and correction, a pass over its accumulators) once for them, not per block.
//! Against 16, AMD EPYC Zen 5, alternating: in L2 0.83 x the time; from memory GQA 0.74-0.83 x,
//! one MHA row 0.82-0.87 x, 16 at 256 0.97 x (on the Zen 4, 4 blocks once read 5-10 % slower).
constexpr uint32_t decode_fold_keys = 64;

//! Blocks of a decode row's bf16 fold; 1 where they are not whole chunks or hold more keys.
constexpr uint32_t decode_blocks_per_fold(uint32_t block_size) {
  return block_size % 16 == 0 && block_size < decode_fold_keys ? decode_fold_keys / block_size : 1;
}

//! fold_blocks_by_tiles in bf16 (attention_bf16.hpp): the tile packed once, then folded into
//! every query of the kv head whose row sees any of it.
HEARTH_SIMD_INLINE void fold_blocks_bf16(const attn_call& c, const attn_item& it, attn_scratch& w,
                                         const head_blocks& hb, uint64_t first_pos) {
  const uint32_t hd = c.pool.layout().head_dim, bs = c.pool.layout().block_size;
  const seq_rows& s = c.seqs[it.seq];
  const uint16_t* k[max_tile_blocks];
  const uint16_t* v[max_tile_blocks];
  for (uint32_t t = 0; t < hb.n_blocks; ++t) {
    k[t] = reinterpret_cast<const uint16_t*>(c.pool.tile(s.blocks[hb.b + t], c.layer, 0, hb.kv_head));
    v[t] = reinterpret_cast<const uint16_t*>(c.pool.tile(s.blocks[hb.b + t], c.layer, 1, hb.kv_head));
  }
  attention_bf16::pack_tile(k, v, bs, hb.n_keys, hd, w.kp.data(), w.vp.data());
  prefetch_next_tile(c, it, hb);
  const auto first_row = static_cast<uint32_t>(hb.base > first_pos ? hb.base - first_pos : 0);
  const uint32_t q0 = hb.q0 + first_row * c.group, q1 = hb.q0 + it.n_rows * c.group;
  for (uint32_t qi = q0; qi < q1; ++qi) visible_keys(c, hb, first_pos, qi, w.from[qi], w.seen[qi]);
  attention_bf16::fold(w.qb.data() + size_t{q0} * hd, q1 - q0, w.kp.data(), w.vp.data(), hb.n_keys, hd,
                       w.from.data() + q0, w.seen.data() + q0, c.softcap, w.m.data() + q0, w.l.data() + q0,
                       w.acc.data() + size_t{q0} * hd, {w.s.data(), w.pb.data()});
}

//! Folds blocks hb (up to prefill_blocks_per_tile of them, as one tile of keys) into every query
//! of one kv head of the item whose row sees any of it, four queries at a time against the
//! transposed tile: the prefill path, where an item has many queries to share each tile. K is
//! transposed and V converted to f32 once per tile; queries and accumulators are in order.
HEARTH_SIMD_INLINE void fold_blocks_by_tiles(const attn_call& c, const attn_item& it, attn_scratch& w,
                                             const head_blocks& hb, uint64_t first_pos) {
  const uint32_t hd = c.pool.layout().head_dim, bs = c.pool.layout().block_size;
  const uint32_t ld = prefill_tile_keys(bs, false);  // the row stride of kt and p
  const seq_rows& s = c.seqs[it.seq];
  for (uint32_t t = 0; t < hb.n_blocks; ++t) {
    const uint32_t block = s.blocks[hb.b + t], n = std::min(bs, hb.n_keys - t * bs);
    transpose_tile(c.pool.tile(block, c.layer, 0, hb.kv_head), c.pool.layout().dtype, n, hd, ld,
                   w.kt.data() + t * bs);
    tile_to_f32(c.pool, block, c.layer, 1, hb.kv_head, n, w.v.data() + size_t{t} * bs * hd);
  }
  const uint32_t n_keys = hb.n_keys;
  const auto first_row = static_cast<uint32_t>(hb.base > first_pos ? hb.base - first_pos : 0);
  const uint32_t q1 = hb.q0 + it.n_rows * c.group;
  for (uint32_t qi = hb.q0 + first_row * c.group; qi < q1; qi += max_queries_per_fold) {
    const uint32_t count = std::min(max_queries_per_fold, q1 - qi);
    uint32_t from[max_queries_per_fold], seen[max_queries_per_fold];
    for (uint32_t g = 0; g < count; ++g) visible_keys(c, hb, first_pos, qi + g, from[g], seen[g]);
    const float* q = w.q.data() + size_t{qi} * hd;
    float* acc = w.acc.data() + size_t{qi} * hd;
    float* m = w.m.data() + qi;
    float* l = w.l.data() + qi;
    const float *kt = w.kt.data(), *v = w.v.data();
    switch (count) {
      case 4:
        fold_tile_transposed<4>(q, kt, v, n_keys, from, seen, hd, ld, m, l, acc, w.p.data(), c.softcap);
        break;
      case 3:
        fold_tile_transposed<3>(q, kt, v, n_keys, from, seen, hd, ld, m, l, acc, w.p.data(), c.softcap);
        break;
      case 2:
        fold_tile_transposed<2>(q, kt, v, n_keys, from, seen, hd, ld, m, l, acc, w.p.data(), c.softcap);
        break;
      default:
        fold_tile_transposed<1>(q, kt, v, n_keys, from, seen, hd, ld, m, l, acc, w.p.data(), c.softcap);
        break;
    }
  }
}

//! The tiles the item folds after hb's kv heads [hb.kv_head, + heads) in bf16, to ask for
//! meanwhile: the next heads' of the same blocks, else the next blocks' first. AMD EPYC Zen 5,
//! small's heads at batch 16: asked for a block ahead (48 KiB, as one head at a time is), the fold
//! took 1.07-1.19 x the time; into L2, 1.19-1.26 x.
HEARTH_SIMD_INLINE attention_bf16::head_tiles next_tiles(const attn_call& c, const attn_item& it,
                                                         const head_blocks& hb, uint32_t heads) {
  const size_t tile = c.pool.layout().tile_bytes();
  attention_bf16::head_tiles ht{.stride = heads > 1 ? tile / sizeof(uint16_t) : 0};
  const uint32_t next = hb.kv_head - it.head0 + heads;
  const uint32_t nh = it.head0 + next % it.n_heads, nb = hb.b + next / it.n_heads * hb.n_blocks;
  if (nb >= it.block1) return ht;
  const uint32_t n = std::min(heads, it.head0 + it.n_heads - nh);
  for (uint32_t b = nb; b < std::min(it.block1, nb + hb.n_blocks); ++b)
    for (uint32_t kv = 0; kv < 2; ++kv)
      ht.ahead[ht.ahead_runs++] =
          reinterpret_cast<const char*>(c.pool.tile(c.seqs[it.seq].blocks[b], c.layer, kv, nh));
  ht.ahead_lines = static_cast<uint32_t>(n * tile / 64);
  return ht;
}

//! Keys [from, n) of hb's blocks, kv heads [hb.kv_head, + heads), folded in bf16 into the
//! item's queries from q0, read in place, in runs of at most max_tile_keys keys.
HEARTH_SIMD_INLINE void fold_in_bf16(const attn_call& c, const attn_item& it, attn_scratch& w,
                                     const head_blocks& hb, uint32_t heads, uint32_t q0, uint32_t n,
                                     uint32_t from) {
  constexpr uint32_t run_keys = attention_bf16::max_tile_keys;
  const uint32_t hd = c.pool.layout().head_dim, bs = c.pool.layout().block_size;
  attention_bf16::head_tiles ht = next_tiles(c, it, hb, heads);
  for (uint32_t j0 = from / run_keys * run_keys; j0 < n; j0 += run_keys, ht.ahead_runs = 0) {
    const uint32_t keys = std::min(run_keys, n - j0);
    attention_bf16::key_chunks kc;
    for (uint32_t k = 0; k < keys; k += 16) {  // 16 keys in one block (decode_blocks_per_fold)
      const uint32_t block = c.seqs[it.seq].blocks[hb.b + (j0 + k) / bs];
      const size_t row = size_t{(j0 + k) % bs} * hd;
      kc.k[k / 16] = reinterpret_cast<const uint16_t*>(c.pool.tile(block, c.layer, 0, hb.kv_head)) + row;
      kc.v[k / 16] = reinterpret_cast<const uint16_t*>(c.pool.tile(block, c.layer, 1, hb.kv_head)) + row;
    }
    attention_bf16::fold_in_place(w.qb.data() + size_t{q0} * hd, heads > 1 ? heads : c.group, kc, ht, keys,
                                  from > j0 ? from - j0 : 0, hd, c.softcap, w.m.data() + q0, w.l.data() + q0,
                                  w.acc.data() + size_t{q0} * hd);
  }
}

//! Folds one kv head's tiles of hb's blocks into its queries of the item, a few queries at a
//! time: decode rows, and chunks of at most 4 queries per kv head. In bf16, hb may span
//! decode_blocks_per_fold blocks, and with heads > 1 (a decode row of one query per kv head) kv
//! heads [hb.kv_head, + heads) fold together; else hb.n_blocks == 1.
template <class E>
HEARTH_SIMD_INLINE void fold_block(const attn_call& c, const attn_item& it, attn_scratch& w,
                                   const head_blocks& hb, uint32_t heads, uint64_t first_pos) {
  const uint32_t hd = c.pool.layout().head_dim, bs = c.pool.layout().block_size;
  const uint32_t block = c.seqs[it.seq].blocks[hb.b];
  // In bf16 (attn_call::bf16_blocks) the tiles are read in place; else as E reads them.
  const bool bf16 = c.bf16_blocks;
  const auto* k = bf16 ? nullptr : tile_as<E>(c.pool, block, c.layer, 0, hb.kv_head, hb.n_keys, w.k);
  const auto* v = bf16 ? nullptr : tile_as<E>(c.pool, block, c.layer, 1, hb.kv_head, hb.n_keys, w.v);
  for (uint32_t i = 0; i < it.n_rows; ++i) {
    const uint64_t pos = first_pos + i;
    if (pos < hb.base) continue;  // this row sees none of the tile
    const auto n = static_cast<uint32_t>(std::min<uint64_t>(hb.n_keys, pos - hb.base + 1));
    // Under a sliding window the row sees the tile's keys from `off` on.
    const uint64_t lo = window_start(pos, c.window);
    const auto off = static_cast<uint32_t>(lo > hb.base ? std::min<uint64_t>(n, lo - hb.base) : 0);
    if (off == n) continue;
    const uint32_t q0 = hb.q0 + i * c.group;
    if (bf16) {
      fold_in_bf16(c, it, w, hb, heads, q0, n, off);
      continue;
    }
    assert(heads == 1 && "paged_attention: kv heads fold together only in bf16");
    fold_queries<E>(w, q0, q0 + c.group, k + size_t{off} * hd, v + size_t{off} * hd, n - off, hd, bs,
                    c.softcap);
  }
}

template <class E>
HEARTH_SIMD_INLINE void attend(const attn_call& c, const attn_item& it) {
  const kv_layout& lay = c.pool.layout();
  const uint32_t hd = lay.head_dim, bs = lay.block_size;
  const seq_rows& s = c.seqs[it.seq];
  const uint32_t per_head = it.n_rows * c.group;
  const uint32_t nq = it.n_heads * per_head;
  thread_local attn_scratch w;
  w.prepare(nq, hd, bs);
  load_queries<E>(c, it, w.q.data());

  // Prefill (f32_elems: see in_place) folds tiles of several blocks into 4 queries at a time.
  const bool by_tiles = it.n_rows > 1 && per_head > max_queries_per_fold;
  const bool bf16_tiles = by_tiles && c.bf16_tiles;
  const bool in_bf16 = !by_tiles && c.bf16_blocks;  // decode rows (fold_block)
  if (bf16_tiles || in_bf16) {
    w.prepare_bf16(nq, hd, bs);
    attention_bf16::round_queries(w.q.data(), hd, nq, hd, w.qb.data());
  }
  const uint32_t step = by_tiles  ? prefill_blocks_per_tile(bs, bf16_tiles)
                        : in_bf16 ? decode_blocks_per_fold(bs)
                                  : 1;
  // A decode row of one query per kv head (MHA) folds 2 heads at once in bf16, asking for the
  // next 2's tiles (8 KiB ahead): 0.94-0.97 x the time of 4 (performance.md).
  const uint32_t heads_per_fold = in_bf16 && per_head == 1 ? 2 : 1;
  const uint64_t first_pos = uint64_t{s.start_pos} + it.row0;
  const uint64_t end_pos = first_pos + it.n_rows;  // keys [0, end_pos) are visible to some row
  for (uint32_t b = it.block0; b < it.block1; b += step) {
    const uint32_t n_blocks = std::min(step, it.block1 - b);
    const uint64_t base = uint64_t{b} * bs;
    const auto n_keys = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{n_blocks} * bs, end_pos - base));
    for (uint32_t h = 0; h < it.n_heads;) {
      const head_blocks hb{it.head0 + h, h * per_head, b, n_blocks, base, n_keys};
      if (by_tiles) {
        if (bf16_tiles)
          fold_blocks_bf16(c, it, w, hb, first_pos);
        else
          fold_blocks_by_tiles(c, it, w, hb, first_pos);
        ++h;
        continue;
      }
      const uint32_t heads = std::min(heads_per_fold, it.n_heads - h);
      // One head at a time asks for the tiles it folds next, not a block of all heads ahead:
      // `1b`'s batch-16 step 0.95-0.98 x the time (performance.md). bf16 folds: next_tiles.
      if (!in_bf16 && h + 1 < it.n_heads)
        prefetch_tiles<3>(c, s.blocks[b], it.head0 + h + 1);
      else if (!in_bf16 && b + 1 < it.block1)
        prefetch_tiles<3>(c, s.blocks[b + 1], it.head0);
      fold_block<E>(c, it, w, hb, heads, first_pos);
      h += heads;
    }
  }

  if (it.partial == whole_keys) return write_output<E>(c, it, w.acc.data(), w.l.data());
  float* dst = c.partials + it.partial;
  std::copy(w.acc.begin(), w.acc.end(), dst);
  std::copy(w.m.begin(), w.m.end(), dst + w.acc.size());
  std::copy(w.l.begin(), w.l.end(), dst + w.acc.size() + nq);
}

//! Combines the (acc, m, l) of items [first, first + n), one item's key ranges, into its output.
template <class E>
HEARTH_SIMD_INLINE void merge(const attn_call& c, const attn_item* first, uint32_t n) {
  const uint32_t hd = c.pool.layout().head_dim, nq = first->n_heads * first->n_rows * c.group;
  const size_t n_acc = size_t{nq} * hd;
  thread_local std::vector<float> acc, l;
  acc.assign(n_acc, 0.0f);
  l.assign(nq, 0.0f);
  for (uint32_t qi = 0; qi < nq; ++qi) {
    float m = -std::numeric_limits<float>::infinity();
    for (uint32_t r = 0; r < n; ++r) m = std::max(m, c.partials[first[r].partial + n_acc + qi]);
    for (uint32_t r = 0; r < n; ++r) {
      const float* part = c.partials + first[r].partial;
      const float scale = simd::exp(part[n_acc + qi] - m);  // a range the row cannot see: m -inf, l 0
      l[qi] += part[n_acc + nq + qi] * scale;
      for (uint32_t d = 0; d < hd; ++d) acc[size_t{qi} * hd + d] += part[size_t{qi} * hd + d] * scale;
    }
  }
  write_output<E>(c, *first, acc.data(), l.data());
}

//! Whether an item reads a bf16 pool's tiles in place. Only when one fold covers all the item's
//! queries (a decode row with at most 4 query heads per kv head): each further fold would widen
//! the tile again, where converting it once to f32 is cheaper. Not where blocks fold in bf16,
//! whose queries and accumulators are in order (f32_elems').
bool in_place(const attn_call& c, uint32_t n_rows) {
  return !c.bf16_blocks && c.pool.layout().dtype == kv_dtype::bf16 &&
         n_rows * c.group <= max_queries_per_fold;
}

HEARTH_SIMD_CLONES
void attend_item(const attn_call& c, const attn_item& it) {
  if (in_place(c, it.n_rows))
    attend<bf16_elems>(c, it);
  else
    attend<f32_elems>(c, it);
}

HEARTH_SIMD_CLONES
void merge_items(const attn_call& c, const attn_item* first, uint32_t n) {
  if (in_place(c, first->n_rows))
    merge<bf16_elems>(c, first, n);
  else
    merge<f32_elems>(c, first, n);
}

}  // namespace

bool decode_in_bf16(const kv_layout& layout, const attn_params& params) {
  return params.in_bf16 && layout.dtype == kv_dtype::bf16 && attention_bf16::usable(layout.head_dim);
}

bool prefill_in_bf16(const kv_layout& layout, const attn_params& params) {
  return decode_in_bf16(layout, params) &&
         prefill_tile_keys(layout.block_size, true) <= attention_bf16::max_tile_keys;
}

void paged_attention(const kv_pool& pool, uint32_t layer, uint32_t n_head, row_view<const float> q,
                     row_view<float> out, std::span<const seq_rows> seqs, const attn_params& params) {
  const kv_layout& lay = pool.layout();
  assert(n_head > 0 && n_head % lay.n_head_kv == 0 && "paged_attention: n_head not a multiple of n_head_kv");
  assert(layer < lay.n_layer && "paged_attention: layer out of range");
  const uint32_t group = n_head / lay.n_head_kv;
  assert(params.scale >= 0.0f && params.softcap >= 0.0f && "paged_attention: negative scale or cap");
  const attn_plan plan = make_plan(lay, group, params.window, seqs);
  std::vector<float> partials(plan.partial_floats);
  const float scale = params.scale > 0.0f
                          ? params.scale
                          : static_cast<float>(1.0 / std::sqrt(static_cast<double>(lay.head_dim)));
  const bool tiles = prefill_in_bf16(lay, params), blocks = decode_in_bf16(lay, params);
  const attn_call call{pool, layer, group, scale,           params.softcap, params.window,
                       q,    out,   seqs,  partials.data(), tiles,          blocks};
  parallel_for(plan.items.size(), [&](size_t i) { attend_item(call, plan.items[i]); });
  parallel_for(plan.merges.size(), [&](size_t i) {
    merge_items(call, &plan.items[plan.merges[i].first], plan.merges[i].second);
  });
}

}  // namespace hearth::ops
