#include "kernels/attention_bf16.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/attention_tile.hpp"
#include "kernels/avx512_bf16.hpp"
#include "kernels/dpbf16_matmul.hpp"

// Built for any x86-64: only these functions carry the AVX-512 BF16 target (avx512_bf16.hpp), and
// paged_attention calls them only where usable().

// GCC 12's bug 105593 (avx512_bf16.hpp) in many of the intrinsics used here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace hearth::ops::attention_bf16 {
namespace {

using namespace avx512_bf16;

//! Queries folded together: 4 x 4 accumulators of 16 lanes, 4 operand vectors and a broadcast
//! take 21 of AVX-512's 32 registers.
constexpr uint32_t queries_per_fold = 4;

HEARTH_BF16_TARGET inline __m512bh broadcast_pair(const uint16_t* at) {
  uint32_t pair;
  std::memcpy(&pair, at, sizeof pair);
  return as_bf16(_mm512_set1_epi32(static_cast<int>(pair)));
}

//! s (NQ, lds) columns [16 k0, 16 (k0 + NK)) = qb (NQ, hd) . the keys of kp there: one
//! vdpbf16ps per query, key vector and element pair.
template <uint32_t NQ, uint32_t NK>
HEARTH_BF16_TARGET void key_vectors(const uint16_t* qb, uint32_t hd, const uint32_t* kp, uint32_t ldk,
                                    uint32_t k0, float* s, uint32_t lds) {
  __m512 acc[NQ][NK];
  for (auto& row : acc)
    for (auto& a : row) a = _mm512_setzero_ps();
  for (uint32_t p = 0; p < hd / 2; ++p) {
    __m512bh k[NK];
    for (uint32_t x = 0; x < NK; ++x)
      k[x] = as_bf16(_mm512_loadu_si512(kp + size_t{p} * ldk + 16 * (k0 + x)));
    for (uint32_t g = 0; g < NQ; ++g) {
      const __m512bh q = broadcast_pair(qb + size_t{g} * hd + 2 * p);
      for (uint32_t x = 0; x < NK; ++x) acc[g][x] = _mm512_dpbf16_ps(acc[g][x], q, k[x]);
    }
  }
  for (uint32_t g = 0; g < NQ; ++g)
    for (uint32_t x = 0; x < NK; ++x) _mm512_storeu_ps(s + size_t{g} * lds + 16 * (k0 + x), acc[g][x]);
}

template <uint32_t NQ>
HEARTH_BF16_TARGET void scores(const uint16_t* qb, uint32_t hd, const uint32_t* kp, uint32_t ldk, float* s) {
  for (uint32_t k0 = 0; k0 < ldk / 16; k0 += 4) {
    switch (std::min(4u, ldk / 16 - k0)) {
      case 4:
        key_vectors<NQ, 4>(qb, hd, kp, ldk, k0, s, ldk);
        break;
      case 3:
        key_vectors<NQ, 3>(qb, hd, kp, ldk, k0, s, ldk);
        break;
      case 2:
        key_vectors<NQ, 2>(qb, hd, kp, ldk, k0, s, ldk);
        break;
      default:
        key_vectors<NQ, 1>(qb, hd, kp, ldk, k0, s, ldk);
        break;
    }
  }
}

//! acc (NQ, hd) columns [d0, d0 + 16 NV) = acc * correction + p (NQ, ldp) @ the values of vp:
//! one vdpbf16ps per query, column vector and pair of keys.
template <uint32_t NQ, uint32_t NV>
HEARTH_BF16_TARGET void value_vectors(const uint16_t* p, uint32_t ldp, const uint32_t* vp, uint32_t n_pairs,
                                      uint32_t hd, uint32_t d0, const float* correction, float* acc) {
  __m512 a[NQ][NV];
  for (uint32_t g = 0; g < NQ; ++g)
    for (uint32_t x = 0; x < NV; ++x)
      a[g][x] =
          _mm512_mul_ps(_mm512_loadu_ps(acc + size_t{g} * hd + d0 + 16 * x), _mm512_set1_ps(correction[g]));
  for (uint32_t j = 0; j < n_pairs; ++j) {
    __m512bh v[NV];
    for (uint32_t x = 0; x < NV; ++x) v[x] = as_bf16(_mm512_loadu_si512(vp + size_t{j} * hd + d0 + 16 * x));
    for (uint32_t g = 0; g < NQ; ++g) {
      const __m512bh w = broadcast_pair(p + size_t{g} * ldp + 2 * j);
      for (uint32_t x = 0; x < NV; ++x) a[g][x] = _mm512_dpbf16_ps(a[g][x], w, v[x]);
    }
  }
  for (uint32_t g = 0; g < NQ; ++g)
    for (uint32_t x = 0; x < NV; ++x) _mm512_storeu_ps(acc + size_t{g} * hd + d0 + 16 * x, a[g][x]);
}

template <uint32_t NQ>
HEARTH_BF16_TARGET void values(const uint16_t* p, uint32_t ldp, const uint32_t* vp, uint32_t n_pairs,
                               uint32_t hd, const float* correction, float* acc) {
  for (uint32_t d0 = 0; d0 < hd; d0 += 64) {
    switch (std::min(4u, (hd - d0) / 16)) {
      case 4:
        value_vectors<NQ, 4>(p, ldp, vp, n_pairs, hd, d0, correction, acc);
        break;
      case 3:
        value_vectors<NQ, 3>(p, ldp, vp, n_pairs, hd, d0, correction, acc);
        break;
      case 2:
        value_vectors<NQ, 2>(p, ldp, vp, n_pairs, hd, d0, correction, acc);
        break;
      default:
        value_vectors<NQ, 1>(p, ldp, vp, n_pairs, hd, d0, correction, acc);
        break;
    }
  }
}

//! e^x, 16 lanes: simd::exp's polynomial, with 2^n by vscalefps (no clamp above: scores here are
//! at most the running max, so x <= 0; far below, the result goes to zero).
HEARTH_BF16_TARGET inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));  // -inf - m: a number, whose e^x is 0
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f),
                                    _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x));
  __m512 p = _mm512_fmadd_ps(r, _mm512_set1_ps(1.9875691500e-4f), _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}

//! NQ queries' scores s (NQ, ldk) -> their weights p (NQ, ldk) in bf16 over the keys [from[g],
//! seen[g]) each sees, zero elsewhere, soft-capped first when softcap > 0; updates their maxima
//! and sums, and sets the factors their acc rows are to be scaled by. Two passes over the rows,
//! 16 keys at a time, the unseen keys masked off, each step taken for all NQ queries in turn so
//! that their chains of reductions and exponentials overlap (a query at a time, a decode fold
//! spent a quarter of its time waiting on them). The masks come from two compares per query and
//! 16 keys, made once for both passes, and the factors from one exp16 for all NQ queries, where
//! scalar clamps and exponentials were: prefill attention at 1.00-1.09 x the rate (AMD EPYC Zen 5,
//! small's and 1b's heads, 1 and 2 threads, alternating).
template <uint32_t NQ>
HEARTH_BF16_TARGET void weights(float* s, uint32_t ldk, const uint32_t* from, const uint32_t* seen,
                                float softcap, float* m, float* l, uint16_t* p, float* correction) {
  static_assert(NQ <= 16, "one exp16 takes every query's factor");
  __m512 top[NQ], sum[NQ];
  __m512i first[NQ], end[NQ];
  for (uint32_t g = 0; g < NQ; ++g) {
    if (softcap > 0.0f && from[g] < seen[g]) simd::softcap(s + g * ldk + from[g], seen[g] - from[g], softcap);
    top[g] = _mm512_set1_ps(m[g]);
    sum[g] = _mm512_setzero_ps();
    first[g] = _mm512_set1_epi32(static_cast<int>(from[g]));
    end[g] = _mm512_set1_epi32(static_cast<int>(seen[g]));
  }
  __mmask16 seen_lanes[NQ][max_tile_keys / 16];
  __m512i key = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (uint32_t j = 0; j < ldk; j += 16, key = _mm512_add_epi32(key, _mm512_set1_epi32(16))) {
    for (uint32_t g = 0; g < NQ; ++g) {
      const __mmask16 lanes = _mm512_cmpge_epu32_mask(key, first[g]) & _mm512_cmplt_epu32_mask(key, end[g]);
      seen_lanes[g][j / 16] = lanes;
      top[g] = _mm512_mask_max_ps(top[g], lanes, top[g], _mm512_loadu_ps(s + g * ldk + j));
    }
  }
  __m512 shift[NQ];
  alignas(64) float m_old[16] = {}, m_new[16] = {};
  for (uint32_t g = 0; g < NQ; ++g) {
    shift[g] = _mm512_set1_ps(_mm512_reduce_max_ps(top[g]));
    m_old[g] = m[g];
    m_new[g] = _mm512_cvtss_f32(shift[g]);
  }
  for (uint32_t j = 0; j < ldk; j += 16) {
    for (uint32_t g = 0; g < NQ; ++g) {
      // A query that sees none of these keys: every lane masked, whatever its shift (-inf at first).
      const __m512 e = _mm512_maskz_mov_ps(seen_lanes[g][j / 16],
                                           exp16(_mm512_sub_ps(_mm512_loadu_ps(s + g * ldk + j), shift[g])));
      sum[g] = _mm512_add_ps(sum[g], e);
      const __m256bh b = _mm512_cvtneps_pbh(e);
      std::memcpy(p + g * ldk + j, &b, sizeof b);
    }
  }
  // ~1e-38 on the first tile, where l and acc are 0; 1 where the query saw nothing new (its m
  // unchanged: -inf - -inf on the first tile).
  __mmask16 saw = 0;
  for (uint32_t g = 0; g < NQ; ++g) saw |= static_cast<__mmask16>((from[g] < seen[g] ? 1u : 0u) << g);
  alignas(64) float factor[16];
  _mm512_store_ps(factor,
                  _mm512_mask_blend_ps(saw, _mm512_set1_ps(1.0f),
                                       exp16(_mm512_sub_ps(_mm512_load_ps(m_old), _mm512_load_ps(m_new)))));
  for (uint32_t g = 0; g < NQ; ++g) {
    correction[g] = factor[g];
    l[g] = l[g] * correction[g] + _mm512_reduce_add_ps(sum[g]);
    m[g] = m_new[g];
  }
}

template <uint32_t NQ>
HEARTH_BF16_TARGET void fold_queries(const uint16_t* qb, const uint32_t* kp, const uint32_t* vp, uint32_t n,
                                     uint32_t hd, const uint32_t* from, const uint32_t* seen, float softcap,
                                     float* m, float* l, float* acc, fold_scratch w) {
  const uint32_t ldk = (n + 15) / 16 * 16;
  scores<NQ>(qb, hd, kp, ldk, w.s);
  float correction[NQ];
  weights<NQ>(w.s, ldk, from, seen, softcap, m, l, w.p, correction);
  values<NQ>(w.p, ldk, vp, (n + 1) / 2, hd, correction, acc);
}

HEARTH_BF16_TARGET void round_rows(const float* q, size_t ldq, uint32_t nq, uint32_t hd, uint16_t* qb) {
  for (uint32_t i = 0; i < nq; ++i) {
    const float* src = q + i * ldq;
    for (uint32_t d = 0; d < hd; d += 32) {
      // vcvtne2ps2bf16 rounds to nearest even; its second operand fills the low half.
      const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + d + 16), _mm512_loadu_ps(src + d));
      _mm512_storeu_si512(qb + size_t{i} * hd + d, as_int(b));
    }
  }
}

HEARTH_BF16_TARGET void pack(const uint16_t* const* k, const uint16_t* const* v, uint32_t block_size,
                             uint32_t n, uint32_t hd, uint32_t* kp, uint32_t* vp) {
  const auto row = [&](const uint16_t* const* tiles, uint32_t j) {
    return tiles[j / block_size] + size_t{j % block_size} * hd;
  };
  const uint32_t ldk = (n + 15) / 16 * 16;
  for (uint32_t j0 = 0; j0 < ldk; j0 += 16) {
    for (uint32_t p0 = 0; p0 < hd / 2; p0 += 16) {
      __m512i r[16];
      for (uint32_t i = 0; i < 16; ++i)
        r[i] = j0 + i < n ? _mm512_loadu_si512(row(k, j0 + i) + 2 * p0) : _mm512_setzero_si512();
      transpose_16x16(r);
      for (uint32_t q = 0; q < 16; ++q) _mm512_storeu_si512(kp + size_t{p0 + q} * ldk + j0, r[q]);
    }
  }
  for (uint32_t j = 0; j < n; j += 2) {
    const uint16_t* even = row(v, j);
    const uint16_t* odd = j + 1 < n ? row(v, j + 1) : nullptr;
    for (uint32_t d = 0; d < hd; d += 16) {
      const __m512i lo =
          _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(even + d)));
      const __m512i hi =
          odd ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(odd + d)))
              : _mm512_setzero_si512();
      _mm512_storeu_si512(vp + size_t{j / 2} * hd + d, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }
}
HEARTH_BF16_TARGET void fold_all(const uint16_t* qb, uint32_t nq, const uint32_t* kp, const uint32_t* vp,
                                 uint32_t n, uint32_t hd, const uint32_t* from, const uint32_t* seen,
                                 float softcap, float* m, float* l, float* acc, fold_scratch scratch) {
  for (uint32_t i = 0; i < nq; i += queries_per_fold) {
    const uint16_t* q = qb + size_t{i} * hd;
    float* a = acc + size_t{i} * hd;
    switch (std::min(queries_per_fold, nq - i)) {
      case 4:
        fold_queries<4>(q, kp, vp, n, hd, from + i, seen + i, softcap, m + i, l + i, a, scratch);
        break;
      case 3:
        fold_queries<3>(q, kp, vp, n, hd, from + i, seen + i, softcap, m + i, l + i, a, scratch);
        break;
      case 2:
        fold_queries<2>(q, kp, vp, n, hd, from + i, seen + i, softcap, m + i, l + i, a, scratch);
        break;
      default:
        fold_queries<1>(q, kp, vp, n, hd, from + i, seen + i, softcap, m + i, l + i, a, scratch);
        break;
    }
  }
}

//! 16 vectors, one a key's 16 partial sums, -> the 16 keys' sums in one vector, in key order: the
//! halves of pairs added across 256-bit, then 128-bit lanes, then within them (45 operations,
//! where a reduction per key takes 8), and the keys' order restored by one permute.
HEARTH_BF16_TARGET inline __m512 sum_lanes(const __m512 (&x)[16]) {
  __m512 a[8], b[4], c[2];
  for (int i = 0; i < 8; ++i)  // [key 2i's 8 partials | key 2i + 1's]
    a[i] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  for (int i = 0; i < 4; ++i)  // 128-bit lane L: key 4i + L's 4 partials
    b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  for (int i = 0; i < 2; ++i)  // lane L: keys 8i + L, 8i + 4 + L, 2 partials each, interleaved
    c[i] =
        _mm512_add_ps(_mm512_unpacklo_ps(b[2 * i], b[2 * i + 1]), _mm512_unpackhi_ps(b[2 * i], b[2 * i + 1]));
  const __m512d c0 = _mm512_castps_pd(c[0]), c1 = _mm512_castps_pd(c[1]);
  // Element 4 L + e holds key 4 e + L.
  const __m512 d = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(c0, c1)),
                                 _mm512_castpd_ps(_mm512_unpackhi_pd(c0, c1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, d);
}

//! s (ldk,) = query q (hd,) . keys [0, n) of the chunks, each key's row `offset` elements into
//! its place there, up to ldk (n rounded up to 16): one vdpbf16ps per key and 32 elements, 16
//! keys' sums at a time. P = hd / 32 where the head is one of the common widths, so that the query
//! stays in registers and the rows' offsets are constants (with hd at run time the row pointers
//! spilled); 0 for any.
template <uint32_t P>
HEARTH_BF16_TARGET void row_scores(const uint16_t* q, const uint16_t* const* chunks, size_t offset,
                                   uint32_t n, uint32_t hd, float* s) {
  const uint32_t parts = P != 0 ? P : hd / 32;
  const size_t stride = P != 0 ? 32 * P : hd;
  for (uint32_t j0 = 0; j0 < n; j0 += 16) {
    const uint16_t* k = chunks[j0 / 16] + offset;
    const uint32_t last = std::min(16u, n - j0) - 1;
    __m512 x[16];
#pragma GCC unroll 16
    for (uint32_t j = 0; j < 16; ++j) {
      // Keys past n repeat the last (in the tile, finite): their lanes are masked in weights.
      const uint16_t* row = k + std::min(j, last) * stride;
      x[j] = _mm512_setzero_ps();
      for (uint32_t c = 0; c < parts; ++c)
        x[j] = _mm512_dpbf16_ps(x[j], as_bf16(_mm512_loadu_si512(row + 32 * c)),
                                as_bf16(_mm512_loadu_si512(q + 32 * c)));
    }
    _mm512_storeu_ps(s + j0, sum_lanes(x));
  }
}

HEARTH_BF16_TARGET void head_scores(const uint16_t* q, const uint16_t* const* chunks, size_t offset,
                                    uint32_t n, uint32_t hd, float* s) {
  switch (hd) {
    case 64:
      return row_scores<2>(q, chunks, offset, n, hd, s);
    case 128:
      return row_scores<4>(q, chunks, offset, n, hd, s);
    case 256:
      return row_scores<8>(q, chunks, offset, n, hd, s);
    default:
      return row_scores<0>(q, chunks, offset, n, hd, s);
  }
}

//! Columns [d0, d0 + 16 NV) of the value rows `even` and, if `odd`, the one after it (else zero),
//! interleaved by lo and hi.
template <uint32_t NV>
HEARTH_BF16_TARGET inline void key_pairs(const uint16_t* even, bool odd, uint32_t hd, uint32_t d0, __m512i lo,
                                         __m512i hi, __m512bh (&pairs)[NV]) {
  for (uint32_t x = 0; x < NV / 2; ++x) {
    const __m512i e = _mm512_loadu_si512(even + d0 + 32 * x);
    const __m512i o = odd ? _mm512_loadu_si512(even + hd + d0 + 32 * x) : _mm512_setzero_si512();
    pairs[2 * x] = as_bf16(_mm512_permutex2var_epi16(e, lo, o));
    pairs[2 * x + 1] = as_bf16(_mm512_permutex2var_epi16(e, hi, o));
  }
}

//! acc (NQ, hd) columns [d0, d0 + 16 NV) = acc * correction + p (NQ, ldp) @ the value rows of
//! keys [0, n) of kc, `offset` elements into their places: the rows of consecutive keys
//! interleaved into pairs in registers (vpermt2w), one vdpbf16ps per query, pair of keys and 16
//! columns. An odd last key is paired with zero. With Stride, query g's rows are g * ht.stride
//! further (one query per kv head), each query's pairs its own. The lines ht asks for go out a
//! few at each pair of keys.
template <uint32_t NQ, uint32_t NV, bool Stride>
HEARTH_BF16_TARGET void row_value_vectors(const uint16_t* p, uint32_t ldp, const key_chunks& kc,
                                          size_t offset, head_tiles ht, uint32_t n, uint32_t hd, uint32_t d0,
                                          const float* correction, float* acc) {
  static_assert(NV % 2 == 0, "columns come in pairs of vectors: 32 elements of a row");
  // Word 2i of a pair vector is element i of the even key's row, word 2i + 1 the odd key's (32 + i).
  alignas(64) static constexpr uint16_t interleave[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                          37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                          11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  const __m512i lo = _mm512_load_si512(interleave);
  const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
  __m512 a[NQ][NV];
  for (uint32_t g = 0; g < NQ; ++g)
    for (uint32_t x = 0; x < NV; ++x)
      a[g][x] =
          _mm512_mul_ps(_mm512_loadu_ps(acc + size_t{g} * hd + d0 + 16 * x), _mm512_set1_ps(correction[g]));
  const uint32_t lines = ht.ahead_runs * ht.ahead_lines, n_pairs = (n + 1) / 2;
  uint32_t run = 0, at = 0;  // the next line asked for: line `at` of run `run`
  for (uint32_t j = 0, line = 0; j < n; j += 2) {
    for (const uint32_t due = lines * (j / 2 + 1) / n_pairs; line < due; ++line) {
      _mm_prefetch(ht.ahead[run] + size_t{at} * 64, _MM_HINT_T0);
      if (++at == ht.ahead_lines) at = 0, ++run;
    }
    // A chunk holds 16 keys: a pair never straddles two.
    const uint16_t* v = kc.v[j / 16] + offset + size_t{j % 16} * hd;
    const bool odd = j + 1 < n;
    __m512bh pairs[NV];
    if (!Stride) key_pairs<NV>(v, odd, hd, d0, lo, hi, pairs);
    for (uint32_t g = 0; g < NQ; ++g) {
      if (Stride) key_pairs<NV>(v + g * ht.stride, odd, hd, d0, lo, hi, pairs);
      const __m512bh w = broadcast_pair(p + size_t{g} * ldp + j);
      for (uint32_t x = 0; x < NV; ++x) a[g][x] = _mm512_dpbf16_ps(a[g][x], pairs[x], w);
    }
  }
  for (uint32_t g = 0; g < NQ; ++g)
    for (uint32_t x = 0; x < NV; ++x) _mm512_storeu_ps(acc + size_t{g} * hd + d0 + 16 * x, a[g][x]);
}

//! row_value_vectors over all columns, ht's lines asked for by the first.
template <uint32_t NQ, bool Stride>
HEARTH_BF16_TARGET void row_values(const uint16_t* p, uint32_t ldp, const key_chunks& kc, size_t offset,
                                   head_tiles ht, uint32_t n, uint32_t hd, const float* correction,
                                   float* acc) {
  uint32_t d0 = 0;
  for (; d0 + 64 <= hd; d0 += 64, ht.ahead_runs = 0)
    row_value_vectors<NQ, 4, Stride>(p, ldp, kc, offset, ht, n, hd, d0, correction, acc);
  if (d0 < hd) row_value_vectors<NQ, 2, Stride>(p, ldp, kc, offset, ht, n, hd, d0, correction, acc);
}

//! Keys [from, n) of kc, n <= max_tile_keys, folded into queries [0, NQ) of qb; query g's rows
//! `offset` + g * ht.stride elements into their places.
template <uint32_t NQ>
HEARTH_BF16_TARGET void fold_rows(const uint16_t* qb, const key_chunks& kc, size_t offset, head_tiles ht,
                                  uint32_t n, uint32_t from, uint32_t hd, float softcap, float* m, float* l,
                                  float* acc) {
  const uint32_t ldk = (n + 15) / 16 * 16;
  alignas(64) float s[NQ * max_tile_keys];
  alignas(64) uint16_t p[NQ * max_tile_keys];
  uint32_t first[NQ], seen[NQ];
  float correction[NQ];
  for (uint32_t g = 0; g < NQ; ++g) {
    head_scores(qb + size_t{g} * hd, kc.k, offset + g * ht.stride, n, hd, s + g * ldk);
    first[g] = from;
    seen[g] = n;
  }
  weights<NQ>(s, ldk, first, seen, softcap, m, l, p, correction);
  if (ht.stride)
    row_values<NQ, true>(p, ldk, kc, offset, ht, n, hd, correction, acc);
  else
    row_values<NQ, false>(p, ldk, kc, offset, ht, n, hd, correction, acc);
}

HEARTH_BF16_TARGET void fold_all_rows(const uint16_t* qb, uint32_t nq, const key_chunks& kc, head_tiles ht,
                                      uint32_t n, uint32_t from, uint32_t hd, float softcap, float* m,
                                      float* l, float* acc) {
  for (uint32_t i = 0; i < nq; i += queries_per_fold, ht.ahead_runs = 0) {
    const uint16_t* q = qb + size_t{i} * hd;
    const size_t offset = i * ht.stride;
    float* a = acc + size_t{i} * hd;
    switch (std::min(queries_per_fold, nq - i)) {
      case 4:
        fold_rows<4>(q, kc, offset, ht, n, from, hd, softcap, m + i, l + i, a);
        break;
      case 3:
        fold_rows<3>(q, kc, offset, ht, n, from, hd, softcap, m + i, l + i, a);
        break;
      case 2:
        fold_rows<2>(q, kc, offset, ht, n, from, hd, softcap, m + i, l + i, a);
        break;
      default:
        fold_rows<1>(q, kc, offset, ht, n, from, hd, softcap, m + i, l + i, a);
        break;
    }
  }
}

}  // namespace

bool usable(uint32_t head_dim) {
  return head_dim % 32 == 0 && dpbf16_available();
}

void round_queries(const float* q, size_t ldq, uint32_t nq, uint32_t hd, uint16_t* qb) {
  round_rows(q, ldq, nq, hd, qb);
}

void pack_tile(const uint16_t* const* k, const uint16_t* const* v, uint32_t block_size, uint32_t n,
               uint32_t hd, uint32_t* kp, uint32_t* vp) {
  pack(k, v, block_size, n, hd, kp, vp);
}

void fold(const uint16_t* qb, uint32_t nq, const uint32_t* kp, const uint32_t* vp, uint32_t n, uint32_t hd,
          const uint32_t* from, const uint32_t* seen, float softcap, float* m, float* l, float* acc,
          fold_scratch scratch) {
  fold_all(qb, nq, kp, vp, n, hd, from, seen, softcap, m, l, acc, scratch);
}

void fold_in_place(const uint16_t* qb, uint32_t nq, const key_chunks& keys, head_tiles ht, uint32_t n,
                   uint32_t from, uint32_t hd, float softcap, float* m, float* l, float* acc) {
  fold_all_rows(qb, nq, keys, ht, n, from, hd, softcap, m, l, acc);
}

}  // namespace hearth::ops::attention_bf16
