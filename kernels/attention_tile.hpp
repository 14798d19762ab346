#pragma once
// The arithmetic of flash attention on one K/V tile, internal to kernels/ (paged_attention.cpp
// walks the block tables and calls these). Each fold takes up to max_queries_per_fold queries'
// running softmax (max m, sum l, weighted values acc) and the n keys and values of one tile, and
// leaves the softmax over everything folded so far. Stateless, on raw pointers: no pool, no
// threads. Everything is HEARTH_SIMD_INLINE, to be compiled into the caller's SIMD clones.
//
// Two ways to fold a tile:
// - fold_tile<E, NQ>: K and V read as E reads them; the decode path, which reads a bf16 pool's
//   tiles in place, 16 elements at a time by simd::widen_bf16_pairs, which yields the even
//   elements, then the odd ones. Queries and accumulators are kept in that order ("tile order",
//   tile_index), so the dot products and the weighted sums need no shuffles.
// - fold_tile_transposed<NQ>: the prefill path, K transposed to f32 (transpose_tile) so that
//   scores are broadcast FMAs, 8 keys to a vector, with no horizontal sums, and a causal mask
//   per query on the diagonal tile (and a sliding window's start on the oldest).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/kv_pool.hpp"
#include "kernels/simd.hpp"

namespace hearth::ops::attention_tile {

using simd::vec;

//! Queries folded together: 4 keep 8 accumulators and 2 V vectors in AVX2's 16 registers.
constexpr uint32_t max_queries_per_fold = 4;

//! K/V elements of an f32 pool: 16 at a time in order.
struct f32_elems {
  using type = float;
  HEARTH_SIMD_INLINE static void load16(const float* p, vec& a, vec& b) {
    a = simd::load(p);
    b = simd::load(p + simd::lanes);
  }
  HEARTH_SIMD_INLINE static float at(const float* p, uint32_t i) { return p[i]; }
  //! Where element j of a 16-block lands in (a | b).
  static constexpr uint32_t slot(uint32_t j) { return j; }
};

//! K/V elements of a bf16 pool, read in place: 16 at a time as (even elements | odd elements).
struct bf16_elems {
  using type = uint16_t;
  HEARTH_SIMD_INLINE static void load16(const uint16_t* p, vec& a, vec& b) {
    simd::widen_bf16_pairs(p, a, b);
  }
  HEARTH_SIMD_INLINE static float at(const uint16_t* p, uint32_t i) { return simd::bf16_to_f32(p[i]); }
  static constexpr uint32_t slot(uint32_t j) { return j % 2 == 0 ? j / 2 : simd::lanes + j / 2; }
};

//! The index in tile order of element d of a head_dim row: 16-blocks permuted by E::slot, the
//! tail (head_dim % 16) as it is.
template <class E>
HEARTH_SIMD_INLINE uint32_t tile_index(uint32_t d, uint32_t hd) {
  constexpr uint32_t w = 2 * simd::lanes;
  return d < hd / w * w ? d / w * w + E::slot(d % w) : d;
}

//! s[0, c) = scores of one query q (hd,) in tile order against C keys k (C, hd), C = 1 or 8: one
//! accumulator per key, and for 8 keys one tree reduction (simd::hsum8) instead of 8.
template <class E, uint32_t C>
HEARTH_SIMD_INLINE void key_scores(const float* q, const typename E::type* k, uint32_t hd, float* s) {
  constexpr uint32_t w = 2 * simd::lanes;
  vec acc[C] = {};
  uint32_t d = 0;
  for (; d + w <= hd; d += w) {
    const vec qa = simd::load(q + d), qb = simd::load(q + d + simd::lanes);
    for (uint32_t j = 0; j < C; ++j) {
      vec ka, kb;
      E::load16(k + size_t{j} * hd + d, ka, kb);
      acc[j] += qa * ka;
      acc[j] += qb * kb;
    }
  }
  float tail[C] = {};
  for (uint32_t j = 0; j < C; ++j)
    for (uint32_t e = d; e < hd; ++e) tail[j] += q[e] * E::at(k + size_t{j} * hd, e);
  if constexpr (C == simd::lanes) {
    simd::store(s, simd::hsum8(acc) + simd::load(tail));
  } else {
    for (uint32_t j = 0; j < C; ++j) s[j] = simd::hsum(acc[j]) + tail[j];
  }
}

//! Scores of NQ queries q (NQ, hd) in tile order against keys k (n, hd) -> s (NQ, s_stride), 8
//! keys at a time: the K tile is read once per query, from L1 after the first.
template <class E, uint32_t NQ>
HEARTH_SIMD_INLINE void tile_scores(const float* q, const typename E::type* k, uint32_t n, uint32_t hd,
                                    float* s, uint32_t s_stride) {
  for (uint32_t g = 0; g < NQ; ++g) {
    uint32_t j = 0;
    for (; j + simd::lanes <= n; j += simd::lanes)
      key_scores<E, simd::lanes>(q + g * size_t{hd}, k + size_t{j} * hd, hd, s + g * s_stride + j);
    for (; j < n; ++j) key_scores<E, 1>(q + g * size_t{hd}, k + size_t{j} * hd, hd, s + g * s_stride + j);
  }
}

//! p (n,) = exp(p - m_new) in place; returns their sum.
HEARTH_SIMD_INLINE float exp_shifted(float* p, uint32_t n, float m_new) {
  vec sums{};
  uint32_t j = 0;
  for (; j + simd::lanes <= n; j += simd::lanes) {
    const vec e = simd::exp(simd::load(p + j) - m_new);
    simd::store(p + j, e);
    sums += e;
  }
  float sum = simd::hsum(sums);
  for (; j < n; ++j) sum += (p[j] = simd::exp(p[j] - m_new));
  return sum;
}

//! tile_accumulate's work on columns [d, d + 16 S) for S = strip, from d = d0 while they fit in
//! hd; returns where it stopped.
template <class E, uint32_t NQ, uint32_t S>
HEARTH_SIMD_INLINE uint32_t accumulate_strips(const float* p, uint32_t p_stride, const typename E::type* v,
                                              uint32_t n, uint32_t hd, uint32_t d, const float* correction,
                                              float* acc) {
  constexpr uint32_t w = 2 * simd::lanes;  // columns per load16
  for (; d + S * w <= hd; d += S * w) {
    vec a[NQ][2 * S];
    for (uint32_t g = 0; g < NQ; ++g)
      for (uint32_t x = 0; x < 2 * S; ++x)
        a[g][x] = simd::load(acc + g * size_t{hd} + d + x * simd::lanes) * correction[g];
    for (uint32_t j = 0; j < n; ++j) {
      for (uint32_t x = 0; x < S; ++x) {
        vec v0, v1;
        E::load16(v + size_t{j} * hd + d + x * w, v0, v1);
        for (uint32_t g = 0; g < NQ; ++g) {
          a[g][2 * x] += p[g * p_stride + j] * v0;
          a[g][2 * x + 1] += p[g * p_stride + j] * v1;
        }
      }
    }
    for (uint32_t g = 0; g < NQ; ++g)
      for (uint32_t x = 0; x < 2 * S; ++x) simd::store(acc + g * size_t{hd} + d + x * simd::lanes, a[g][x]);
  }
  return d;
}

//! acc (NQ, hd) = acc * correction (NQ,) + p (NQ, p_stride) @ v (n, hd), acc in tile order: a
//! strip of 8 V vectors' worth of columns per query shared among NQ (64 columns for one query),
//! so each V row is loaded once for all NQ queries, the accumulators stay in registers, and one
//! query walks a 64-wide head's tile row after row, as the hardware prefetcher likes. Then 16
//! columns at a time, then one by one (head_dim not a multiple of 16).
template <class E, uint32_t NQ>
HEARTH_SIMD_INLINE void tile_accumulate(const float* p, uint32_t p_stride, const typename E::type* v,
                                        uint32_t n, uint32_t hd, const float* correction, float* acc) {
  constexpr uint32_t strip = NQ == 1 ? 4 : NQ == 2 ? 2 : 1;
  uint32_t d = accumulate_strips<E, NQ, strip>(p, p_stride, v, n, hd, 0, correction, acc);
  if constexpr (strip > 1) d = accumulate_strips<E, NQ, 1>(p, p_stride, v, n, hd, d, correction, acc);
  for (; d < hd; ++d) {
    for (uint32_t g = 0; g < NQ; ++g) {
      float a = acc[g * size_t{hd} + d] * correction[g];
      for (uint32_t j = 0; j < n; ++j) a += p[g * p_stride + j] * E::at(v + size_t{j} * hd, d);
      acc[g * size_t{hd} + d] = a;
    }
  }
}

//! Folds keys k (n, hd) and values v (n, hd) into the running softmax of NQ queries q (NQ, hd):
//! max m (NQ,), sum l (NQ,), acc (NQ, hd). p (NQ, p_stride >= n) is scratch. Scores are
//! soft-capped (c tanh(s / c)) when softcap > 0: one branch per fold, nothing when it is off.
template <class E, uint32_t NQ>
HEARTH_SIMD_INLINE void fold_tile(const float* q, const typename E::type* k, const typename E::type* v,
                                  uint32_t n, uint32_t hd, float* m, float* l, float* acc, float* p,
                                  uint32_t p_stride, float softcap) {
  tile_scores<E, NQ>(q, k, n, hd, p, p_stride);
  float correction[NQ];
  for (uint32_t g = 0; g < NQ; ++g) {
    float* pg = p + g * p_stride;
    if (softcap > 0.0f) simd::softcap(pg, n, softcap);
    const float m_new = simd::max(pg, n, m[g]);
    correction[g] = simd::exp(m[g] - m_new);  // ~1e-38 on the first tile, where l and acc are 0
    l[g] = l[g] * correction[g] + exp_shifted(pg, n, m_new);
    m[g] = m_new;
  }
  tile_accumulate<E, NQ>(p, p_stride, v, n, hd, correction, acc);
}

//! out (8, ldo) = the 8 x 8 bf16 block at k (8, ldk), widened to f32 and transposed: unpacks
//! within 128-bit lanes, then across them. (Element by element, the transpose took a tenth of a
//! prefill item's f32 folds; this way prefill attention is 2-5 % faster, Zen 4, one thread.)
HEARTH_SIMD_INLINE void transpose_8x8(const uint16_t* k, uint32_t ldk, float* out, uint32_t ldo) {
  using u16x8 = uint16_t __attribute__((vector_size(16)));
  using u32x8 = uint32_t __attribute__((vector_size(32)));
  vec r[8], t[8], u[8];
  for (uint32_t i = 0; i < 8; ++i) {
    u16x8 raw;
    std::memcpy(&raw, k + size_t{i} * ldk, sizeof raw);
    const u32x8 bits = __builtin_convertvector(raw, u32x8) << 16;
    std::memcpy(&r[i], &bits, sizeof bits);
  }
  for (uint32_t i = 0; i < 8; i += 2) {  // (r_i0 r_i+1,0 r_i1 r_i+1,1 | ...4 ...5) and the 2, 3, 6, 7
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (uint32_t i = 0; i < 8; i += 4) {  // columns (c | c + 4) of rows i..i+3, c = 0..3
    u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (uint32_t c = 0; c < 4; ++c) {
    simd::store(out + size_t{c} * ldo, __builtin_shufflevector(u[c], u[c + 4], 0, 1, 2, 3, 8, 9, 10, 11));
    simd::store(out + size_t{c + 4} * ldo,
                __builtin_shufflevector(u[c], u[c + 4], 4, 5, 6, 7, 12, 13, 14, 15));
  }
}

//! kt (hd, ld) = the K tile of one head (n keys) as f32, transposed: a key's elements become
//! a column, so one query's scores against 8 keys are the lanes of one accumulator.
HEARTH_SIMD_INLINE void transpose_tile(const std::byte* tile, kv_dtype dtype, uint32_t n, uint32_t hd,
                                       uint32_t ld, float* kt) {
  if (dtype == kv_dtype::f32) {
    const auto* k = reinterpret_cast<const float*>(tile);
    for (uint32_t j = 0; j < n; ++j)
      for (uint32_t d = 0; d < hd; ++d) kt[size_t{d} * ld + j] = k[size_t{j} * hd + d];
    return;
  }
  const auto* k = reinterpret_cast<const uint16_t*>(tile);
  uint32_t j = 0;
  if (hd % simd::lanes == 0) {
    for (; j + simd::lanes <= n; j += simd::lanes)
      for (uint32_t d = 0; d < hd; d += simd::lanes)
        transpose_8x8(k + size_t{j} * hd + d, hd, kt + size_t{d} * ld + j, ld);
  }
  for (; j < n; ++j)
    for (uint32_t d = 0; d < hd; ++d) kt[size_t{d} * ld + j] = simd::bf16_to_f32(k[size_t{j} * hd + d]);
}

//! Elements of a dot product summed in one chain before the chain joins the total: one chain
//! over all of a 128-wide head lost enough to fail the 1e-5 check on peaky scores (exp turns a
//! score's absolute error into a relative one).
constexpr uint32_t dot_block = 16;

//! s (NQ, ld) = q (NQ, hd) @ kt (hd, ld), keys [0, n <= ld): the queries broadcast element by element
//! against W keys at a time, every load of kt shared by NQ queries; no horizontal sums.
template <uint32_t NQ, uint32_t W>
HEARTH_SIMD_INLINE uint32_t scores_by_columns(const float* q, const float* kt, uint32_t j, uint32_t n,
                                              uint32_t hd, uint32_t ld, float* s) {
  for (; j + W * simd::lanes <= n; j += W * simd::lanes) {
    for (uint32_t d0 = 0; d0 < hd; d0 += dot_block) {
      vec a[NQ][W] = {};
      for (uint32_t d = d0; d < std::min(d0 + dot_block, hd); ++d) {
        vec k[W];
        for (uint32_t x = 0; x < W; ++x) k[x] = simd::load(kt + size_t{d} * ld + j + x * simd::lanes);
        for (uint32_t g = 0; g < NQ; ++g) {
          const vec qd = simd::splat(q[g * size_t{hd} + d]);
          for (uint32_t x = 0; x < W; ++x) a[g][x] += qd * k[x];
        }
      }
      for (uint32_t g = 0; g < NQ; ++g) {
        for (uint32_t x = 0; x < W; ++x) {
          float* out = s + g * size_t{ld} + j + x * simd::lanes;
          simd::store(out, d0 == 0 ? a[g][x] : simd::load(out) + a[g][x]);
        }
      }
    }
  }
  return j;
}

template <uint32_t NQ>
HEARTH_SIMD_INLINE void scores_transposed(const float* q, const float* kt, uint32_t n, uint32_t hd,
                                          uint32_t ld, float* s) {
  uint32_t j = scores_by_columns<NQ, 2>(q, kt, 0, n, hd, ld, s);
  j = scores_by_columns<NQ, 1>(q, kt, j, n, hd, ld, s);
  for (; j < n; ++j) {
    for (uint32_t g = 0; g < NQ; ++g) {
      float dot = 0;
      for (uint32_t d0 = 0; d0 < hd; d0 += dot_block) {
        float part = 0;
        for (uint32_t d = d0; d < std::min(d0 + dot_block, hd); ++d)
          part += q[g * size_t{hd} + d] * kt[size_t{d} * ld + j];
        dot += part;
      }
      s[g * size_t{ld} + j] = dot;
    }
  }
}

//! Folds one tile of n keys (kt (hd, ld) transposed, v (n, hd) in order) into NQ queries whose
//! rows see keys [from[g], seen[g]) of it (the causal mask on the diagonal, a sliding window's
//! start): scores for all, soft-capped when softcap > 0, softmax over what each sees, the unseen
//! weights zero. A query that sees none of the tile keeps its state.
template <uint32_t NQ>
HEARTH_SIMD_INLINE void fold_tile_transposed(const float* q, const float* kt, const float* v, uint32_t n,
                                             const uint32_t* from, const uint32_t* seen, uint32_t hd,
                                             uint32_t ld, float* m, float* l, float* acc, float* p,
                                             float softcap) {
  scores_transposed<NQ>(q, kt, n, hd, ld, p);
  float correction[NQ];
  for (uint32_t g = 0; g < NQ; ++g) {
    float* pg = p + g * size_t{ld};
    if (from[g] >= seen[g]) {
      correction[g] = 1.0f;
      std::fill(pg, pg + n, 0.0f);
      continue;
    }
    if (softcap > 0.0f) simd::softcap(pg + from[g], seen[g] - from[g], softcap);
    const float m_new = simd::max(pg + from[g], seen[g] - from[g], m[g]);
    correction[g] = simd::exp(m[g] - m_new);
    l[g] = l[g] * correction[g] + exp_shifted(pg + from[g], seen[g] - from[g], m_new);
    std::fill(pg, pg + from[g], 0.0f);
    std::fill(pg + seen[g], pg + n, 0.0f);
    m[g] = m_new;
  }
  tile_accumulate<f32_elems, NQ>(p, ld, v, n, hd, correction, acc);
}

}  // namespace hearth::ops::attention_tile
