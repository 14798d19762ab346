// ops::paged_attention: causal attention over the paged KV cache, flash-attention style. Each work
// item takes one sequence's chunk of query rows and all query heads of one kv head (GQA), walks
// the sequence's block table once, and folds every K/V tile into each query's running softmax
// (max m, sum l, weighted values acc). So a decode step streams each K/V tile once per kv head.

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu_ops.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace hearth::ops {

namespace {

//! Query rows per work item: a prefill chunk's rows share each K/V tile read, and a long chunk
//! still splits into enough items to keep every thread busy.
constexpr uint32_t rows_per_item = 16;

//! Queries folded together: 4 keep 8 accumulators and 2 V vectors in AVX2's 16 registers.
constexpr uint32_t max_queries_per_fold = 4;

//! Query rows [row0, row0 + n_rows) of sequence `seq`, with all query heads of kv head `kv_head`.
struct attn_item {
  uint32_t seq;
  uint32_t kv_head;
  uint32_t row0;
  uint32_t n_rows;
};

//! What all items of one call share.
struct attn_call {
  const kv_pool& pool;
  uint32_t layer;
  uint32_t group;  // query heads per kv head
  float scale;     // 1 / sqrt(head_dim)
  row_view<const float> q;
  row_view<float> out;
  std::span<const seq_rows> seqs;
};

//! One thread's buffers, kept across calls so that a decode step allocates nothing.
struct attn_scratch {
  std::vector<float> q;    // (nq, head_dim) the item's queries, times scale
  std::vector<float> acc;  // (nq, head_dim) running sum of weight * v
  std::vector<float> m;    // (nq,) running max score
  std::vector<float> l;    // (nq,) running sum of exp(score - m)
  std::vector<float> k;    // (block_size, head_dim) current K tile in f32 (bf16 pools)
  std::vector<float> v;    // (block_size, head_dim) current V tile in f32 (bf16 pools)
  std::vector<float> p;    // (4, block_size) scores, then weights, of the queries being folded

  void prepare(uint32_t nq, uint32_t hd, uint32_t bs) {
    q.resize(size_t{nq} * hd);
    acc.assign(size_t{nq} * hd, 0.0f);
    m.assign(nq, -std::numeric_limits<float>::infinity());
    l.assign(nq, 0.0f);
    k.resize(size_t{bs} * hd);
    v.resize(size_t{bs} * hd);
    p.resize(size_t{max_queries_per_fold} * bs);
  }
};

//! The first n rows of a tile (block_size, head_dim) as f32: the pool's own bytes for f32 pools,
//! else converted into `buf`.
HEARTH_SIMD_INLINE const float* tile_f32(const kv_pool& pool, uint32_t block, uint32_t layer, uint32_t kv,
                                         uint32_t head, uint32_t n, std::vector<float>& buf) {
  const std::byte* t = pool.tile(block, layer, kv, head);
  if (pool.layout().dtype == kv_dtype::f32) return reinterpret_cast<const float*>(t);
  const auto* src = reinterpret_cast<const uint16_t*>(t);
  const size_t count = size_t{n} * pool.layout().head_dim;
  for (size_t i = 0; i < count; ++i) buf[i] = simd::bf16_to_f32(src[i]);
  return buf.data();
}

//! Scores of NQ queries q (NQ, hd) against keys k (n, hd) -> s (NQ, s_stride). Each key is
//! loaded once for all NQ queries; the partial sums stay in registers until the end.
template <uint32_t NQ>
HEARTH_SIMD_INLINE void tile_scores(const float* q, const float* k, uint32_t n, uint32_t hd, float* s,
                                    uint32_t s_stride) {
  for (uint32_t j = 0; j < n; ++j) {
    const float* kj = k + size_t{j} * hd;
    simd::vec acc[NQ] = {};
    uint32_t d = 0;
    for (; d + simd::lanes <= hd; d += simd::lanes) {
      const simd::vec kv = simd::load(kj + d);
      for (uint32_t g = 0; g < NQ; ++g) acc[g] += simd::load(q + g * size_t{hd} + d) * kv;
    }
    for (uint32_t g = 0; g < NQ; ++g) {
      float sum = simd::hsum(acc[g]);
      for (uint32_t e = d; e < hd; ++e) sum += q[g * size_t{hd} + e] * kj[e];
      s[g * s_stride + j] = sum;
    }
  }
}

//! p (n,) = exp(p - m_new) in place; returns their sum.
HEARTH_SIMD_INLINE float exp_shifted(float* p, uint32_t n, float m_new) {
  simd::vec sums{};
  uint32_t j = 0;
  for (; j + simd::lanes <= n; j += simd::lanes) {
    const simd::vec e = simd::exp(simd::load(p + j) - m_new);
    simd::store(p + j, e);
    sums += e;
  }
  float sum = simd::hsum(sums);
  for (; j < n; ++j) sum += (p[j] = simd::exp(p[j] - m_new));
  return sum;
}

//! acc (NQ, hd) = acc * correction (NQ,) + p (NQ, p_stride) @ v (n, hd): 16 columns at a time,
//! so each V row is loaded once for all NQ queries and the 2 NQ accumulators stay in registers.
template <uint32_t NQ>
HEARTH_SIMD_INLINE void tile_accumulate(const float* p, uint32_t p_stride, const float* v, uint32_t n,
                                        uint32_t hd, const float* correction, float* acc) {
  constexpr uint32_t w = 2 * simd::lanes;
  uint32_t d = 0;
  for (; d + w <= hd; d += w) {
    simd::vec a0[NQ], a1[NQ];
    for (uint32_t g = 0; g < NQ; ++g) {
      a0[g] = simd::load(acc + g * size_t{hd} + d) * correction[g];
      a1[g] = simd::load(acc + g * size_t{hd} + d + simd::lanes) * correction[g];
    }
    for (uint32_t j = 0; j < n; ++j) {
      const simd::vec v0 = simd::load(v + size_t{j} * hd + d),
                      v1 = simd::load(v + size_t{j} * hd + d + simd::lanes);
      for (uint32_t g = 0; g < NQ; ++g) {
        a0[g] += p[g * p_stride + j] * v0;
        a1[g] += p[g * p_stride + j] * v1;
      }
    }
    for (uint32_t g = 0; g < NQ; ++g) {
      simd::store(acc + g * size_t{hd} + d, a0[g]);
      simd::store(acc + g * size_t{hd} + d + simd::lanes, a1[g]);
    }
  }
  for (; d < hd; ++d) {  // head_dim not a multiple of 16
    for (uint32_t g = 0; g < NQ; ++g) {
      float a = acc[g * size_t{hd} + d] * correction[g];
      for (uint32_t j = 0; j < n; ++j) a += p[g * p_stride + j] * v[size_t{j} * hd + d];
      acc[g * size_t{hd} + d] = a;
    }
  }
}

//! Folds keys k (n, hd) and values v (n, hd) into the running softmax of NQ queries q (NQ, hd):
//! max m (NQ,), sum l (NQ,), acc (NQ, hd). p (NQ, p_stride >= n) is scratch.
template <uint32_t NQ>
HEARTH_SIMD_INLINE void fold_tile(const float* q, const float* k, const float* v, uint32_t n, uint32_t hd,
                                  float* m, float* l, float* acc, float* p, uint32_t p_stride) {
  tile_scores<NQ>(q, k, n, hd, p, p_stride);
  float correction[NQ];
  for (uint32_t g = 0; g < NQ; ++g) {
    float* pg = p + g * p_stride;
    const float m_new = std::max(m[g], *std::max_element(pg, pg + n));
    correction[g] = simd::exp(m[g] - m_new);  // ~1e-38 on the first tile, where l and acc are 0
    l[g] = l[g] * correction[g] + exp_shifted(pg, n, m_new);
    m[g] = m_new;
  }
  tile_accumulate<NQ>(p, p_stride, v, n, hd, correction, acc);
}

//! fold_tile over queries [q0, q1) of the item, max_queries_per_fold at a time.
HEARTH_SIMD_INLINE void fold_queries(attn_scratch& w, uint32_t q0, uint32_t q1, const float* k,
                                     const float* v, uint32_t n, uint32_t hd, uint32_t bs) {
  for (uint32_t qi = q0; qi < q1; qi += max_queries_per_fold) {
    float* q = w.q.data() + size_t{qi} * hd;
    float* acc = w.acc.data() + size_t{qi} * hd;
    float* m = w.m.data() + qi;
    float* l = w.l.data() + qi;
    switch (std::min(max_queries_per_fold, q1 - qi)) {
      case 4:
        fold_tile<4>(q, k, v, n, hd, m, l, acc, w.p.data(), bs);
        break;
      case 3:
        fold_tile<3>(q, k, v, n, hd, m, l, acc, w.p.data(), bs);
        break;
      case 2:
        fold_tile<2>(q, k, v, n, hd, m, l, acc, w.p.data(), bs);
        break;
      default:
        fold_tile<1>(q, k, v, n, hd, m, l, acc, w.p.data(), bs);
        break;
    }
  }
}

HEARTH_SIMD_CLONES
void attend_item(const attn_call& c, const attn_item& it) {
  const kv_layout& lay = c.pool.layout();
  const uint32_t hd = lay.head_dim, bs = lay.block_size;
  const seq_rows& s = c.seqs[it.seq];
  const uint32_t nq = it.n_rows * c.group;  // query (row i, head g of the group) is i * group + g
  const size_t group_floats = size_t{c.group} * hd;
  thread_local attn_scratch w;
  w.prepare(nq, hd, bs);

  for (uint32_t i = 0; i < it.n_rows; ++i) {
    // The group's query heads are adjacent in the row: heads kv_head * group .. + group - 1.
    const float* src = c.q.row(s.first_row + it.row0 + i) + it.kv_head * group_floats;
    float* dst = w.q.data() + i * group_floats;
    for (size_t e = 0; e < group_floats; ++e) dst[e] = src[e] * c.scale;
  }

  const uint64_t first_pos = uint64_t{s.start_pos} + it.row0;
  const uint64_t end_pos = first_pos + it.n_rows;  // keys [0, end_pos) are visible to some row
  for (uint64_t base = 0, b = 0; base < end_pos; base += bs, ++b) {
    const auto n_keys = static_cast<uint32_t>(std::min<uint64_t>(bs, end_pos - base));
    const float* k = tile_f32(c.pool, s.blocks[b], c.layer, 0, it.kv_head, n_keys, w.k);
    const float* v = tile_f32(c.pool, s.blocks[b], c.layer, 1, it.kv_head, n_keys, w.v);
    for (uint32_t i = 0; i < it.n_rows; ++i) {
      const uint64_t pos = first_pos + i;
      if (pos < base) continue;  // this row sees none of the tile
      const auto n = static_cast<uint32_t>(std::min<uint64_t>(n_keys, pos - base + 1));
      fold_queries(w, i * c.group, (i + 1) * c.group, k, v, n, hd, bs);
    }
  }

  for (uint32_t i = 0; i < it.n_rows; ++i) {
    float* dst = c.out.row(s.first_row + it.row0 + i) + it.kv_head * group_floats;
    for (uint32_t g = 0; g < c.group; ++g) {
      const uint32_t qi = i * c.group + g;
      const float inv_l = 1.0f / w.l[qi];  // l >= 1: the max score's own term is e^0
      for (uint32_t d = 0; d < hd; ++d) dst[size_t{g} * hd + d] = w.acc[size_t{qi} * hd + d] * inv_l;
    }
  }
}

}  // namespace

void paged_attention(const kv_pool& pool, uint32_t layer, uint32_t n_head, row_view<const float> q,
                     row_view<float> out, std::span<const seq_rows> seqs) {
  const kv_layout& lay = pool.layout();
  assert(n_head > 0 && n_head % lay.n_head_kv == 0 && "paged_attention: n_head not a multiple of n_head_kv");
  assert(layer < lay.n_layer && "paged_attention: layer out of range");
  const attn_call call{pool,
                       layer,
                       n_head / lay.n_head_kv,
                       static_cast<float>(1.0 / std::sqrt(static_cast<double>(lay.head_dim))),
                       q,
                       out,
                       seqs};
  std::vector<attn_item> items;
  for (uint32_t si = 0; si < seqs.size(); ++si) {
    const seq_rows& s = seqs[si];
    assert((s.n_rows == 0 || (uint64_t{s.start_pos} + s.n_rows - 1) / lay.block_size < s.blocks.size()) &&
           "paged_attention: block table too short");
    for (uint32_t row0 = 0; row0 < s.n_rows; row0 += rows_per_item) {
      for (uint32_t h = 0; h < lay.n_head_kv; ++h) {
        items.push_back({si, h, row0, std::min(rows_per_item, s.n_rows - row0)});
      }
    }
  }
  parallel_for(items.size(), [&](size_t i) { attend_item(call, items[i]); });
}

}  // namespace hearth::ops
