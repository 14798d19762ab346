#include <algorithm>
#include <cstring>

#include "kernels/bf16_panels.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

// The 16-lane kernel, for AVX-512. A 32-byte load of a panel's k is 16 bf16 weights in slot
// order (bf16_gemm.hpp); zero-extending them to 32 bits and shifting left by 16 widens them into
// one zmm in that same order, so the accumulators hold the panel's rows permuted, and the store
// undoes the permutation once per panel. Two panels at a time: each broadcast of x[i][k] feeds
// two FMAs. With 12 activation rows that is 24 accumulators + 2 weight vectors (+ the broadcast,
// which the compiler folds into the FMA), within AVX-512's 32 registers, and 24 FMAs per 14 loads.
// Few rows unroll the k loop instead, as in the w8 kernel, so batch 1 has 8 independent sums.

namespace hearth::bf16_panels {
namespace {

using v16 = float __attribute__((vector_size(64)));
using h16 = uint16_t __attribute__((vector_size(32)));
using u16 = uint32_t __attribute__((vector_size(64)));

//! The most activation rows per pass (see above).
constexpr uint32_t max_acts = 12;

HEARTH_SIMD_INLINE v16 widen(const uint16_t* p) {
  h16 h;
  std::memcpy(&h, p, sizeof h);
  const u16 bits = __builtin_convertvector(h, u16) << 16;
  v16 v;
  std::memcpy(&v, &bits, sizeof v);  // not bit_cast: see simd::exp
  return v;
}

HEARTH_SIMD_INLINE v16 splat(float x) {
  const v16 v{x};
  return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}

//! acc[u][p][i] += panel p's weights at k + u times x row i at k + u, for u < U.
template <uint32_t P, uint32_t M, uint32_t U>
HEARTH_SIMD_INLINE void step(const uint16_t* const (&panel)[P], const float* const (&x)[M], uint32_t k,
                             v16 (&acc)[U][P][M]) {
  for (uint32_t u = 0; u < U; ++u) {
    v16 w[P];
    for (uint32_t p = 0; p < P; ++p) w[p] = widen(panel[p] + size_t{k + u} * panel_rows);
    for (uint32_t i = 0; i < M; ++i) {
      const v16 xi = splat(x[i][k + u]);
      for (uint32_t p = 0; p < P; ++p) acc[u][p][i] += w[p] * xi;
    }
  }
}

//! y rows [i0, i0 + M), the columns of panels [p0, p0 + P) (+ bias).
template <uint32_t P, uint32_t M>
HEARTH_SIMD_INLINE void pass(const bf16_matrix& w, uint32_t p0, const float* x, uint32_t i0, float* y,
                             const float* bias) {
  constexpr uint32_t U = P * M >= 8 ? 1 : 8 / (P * M);  // >= 8 independent sums
  const uint32_t n_in = w.n_in();
  const uint16_t* panel[P];
  for (uint32_t p = 0; p < P; ++p) panel[p] = w.panel(p0 + p);
  const float* xs[M];
  for (uint32_t i = 0; i < M; ++i) xs[i] = x + size_t{i0 + i} * n_in;
  v16 acc[U][P][M] = {};
  uint32_t k = 0;
  for (; k + U <= n_in; k += U) step<P, M, U>(panel, xs, k, acc);
  for (; k < n_in; ++k) step<P, M, 1>(panel, xs, k, reinterpret_cast<v16(&)[1][P][M]>(acc[0]));
  for (uint32_t p = 0; p < P; ++p) {
    const uint32_t o0 = (p0 + p) * panel_rows, n = std::min(panel_rows, w.n_out() - o0);
    for (uint32_t i = 0; i < M; ++i) {
      v16 sum = acc[0][p][i];
      for (uint32_t u = 1; u < U; ++u) sum += acc[u][p][i];
      float slots[panel_rows];
      std::memcpy(slots, &sum, sizeof slots);
      float* yi = y + size_t{i0 + i} * w.n_out() + o0;
      for (uint32_t r = 0; r < n; ++r) yi[r] = slots[slot_of(r)] + (bias ? bias[o0 + r] : 0.0f);
    }
  }
}

template <uint32_t P>
HEARTH_SIMD_INLINE void panels_pass(const bf16_matrix& w, uint32_t p0, const float* x, uint32_t m, float* y,
                                    const float* bias) {
  for (uint32_t i = 0; i < m;) {
    const uint32_t left = m - i;
    if (left >= max_acts) {
      pass<P, max_acts>(w, p0, x, i, y, bias), i += max_acts;
    } else if (left >= 8) {
      pass<P, 8>(w, p0, x, i, y, bias), i += 8;
    } else if (left >= 4) {
      pass<P, 4>(w, p0, x, i, y, bias), i += 4;
    } else if (left >= 2) {
      pass<P, 2>(w, p0, x, i, y, bias), i += 2;
    } else {
      pass<P, 1>(w, p0, x, i, y, bias), i += 1;
    }
  }
}

HEARTH_SIMD_CLONES
void gemm_pair(const bf16_matrix& w, uint32_t p0, const float* x, uint32_t m, float* y, const float* bias) {
  if (p0 + 1 < w.n_panels())
    panels_pass<2>(w, p0, x, m, y, bias);
  else
    panels_pass<1>(w, p0, x, m, y, bias);
}

static_assert(max_acts * 2 + 2 <= 32, "the accumulators and weights fit AVX-512's registers");

}  // namespace

void gemm_w16(const bf16_matrix& w, const float* xr, float* y, uint32_t m, const float* bias) {
  const uint32_t pairs = (w.n_panels() + 1) / 2;
  parallel_for(
      pairs, [&](size_t p) { gemm_pair(w, static_cast<uint32_t>(2 * p), xr, m, y, bias); },
      schedule::streaming);
}

}  // namespace hearth::bf16_panels
