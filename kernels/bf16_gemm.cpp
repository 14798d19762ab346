#include "kernels/bf16_gemm.hpp"

#include <algorithm>
#include <new>
#include <vector>

#include <cstring>

#include "kernels/bf16_panels.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

// The kernel is an outer-product GEMM on a panel: for each k, one 32-byte load gives the panel's
// 16 weights, widened to two f32 vectors (rows 0-7 and 8-15, by the pairing of the layout) by
// two integer ops (simd::widen_bf16_pairs); each of M activation rows broadcasts x[i][k] and
// adds 2 FMAs. With M = 6 that is 12 FMAs per load and 2 widening ops, in 12 accumulators + 2
// weight vectors + 1 broadcast, 15 of AVX2's 16 registers: compute-bound at decode batch sizes
// (small's matmuls at m = 16: about 70 % of the FMA peak, docs/performance.md). With few rows
// (M <= 3) the k loop is unrolled into independent accumulators instead, so the FMA latency
// does not limit the bandwidth-bound batch 1.

namespace hearth {
namespace {

using bf16_panels::panel_rows;
using bf16_panels::slot_of;
using simd::vec;

//! Activation rows per pass over a panel (see above).
constexpr uint32_t max_acts = 6;

//! acc[u] += the panel's weights at k + u times x rows (M, at k + u), for u < U.
template <uint32_t M, uint32_t U>
HEARTH_SIMD_INLINE void panel_step(const uint16_t* panel_k, const float* const (&x)[M], uint32_t k,
                                   vec (&acc)[U][M][2]) {
  for (uint32_t u = 0; u < U; ++u) {
    vec lo, hi;
    simd::widen_bf16_pairs(panel_k + u * panel_rows, lo, hi);  // rows 0-7, rows 8-15
    for (uint32_t i = 0; i < M; ++i) {
      const vec xi = simd::splat(x[i][k + u]);
      acc[u][i][0] += lo * xi;
      acc[u][i][1] += hi * xi;
    }
  }
}

//! sum (M, 2) = panel (n_in, 16) . x rows (M, n_in), the k loop unrolled U times.
template <uint32_t M, uint32_t U>
HEARTH_SIMD_INLINE void panel_dot(const uint16_t* panel, const float* x, uint32_t n_in, vec (&sum)[M][2]) {
  const float* xs[M];
  for (uint32_t i = 0; i < M; ++i) xs[i] = x + size_t{i} * n_in;
  vec acc[U][M][2] = {};
  uint32_t k = 0;
  for (; k + U <= n_in; k += U) panel_step<M, U>(panel + size_t{k} * panel_rows, xs, k, acc);
  for (; k < n_in; ++k) {
    vec(&first)[1][M][2] = reinterpret_cast<vec(&)[1][M][2]>(acc[0]);
    panel_step<M, 1>(panel + size_t{k} * panel_rows, xs, k, first);
  }
  for (uint32_t i = 0; i < M; ++i) {
    sum[i][0] = acc[0][i][0];
    sum[i][1] = acc[0][i][1];
    for (uint32_t u = 1; u < U; ++u) {
      sum[i][0] += acc[u][i][0];
      sum[i][1] += acc[u][i][1];
    }
  }
}

//! One panel's work: its weights (n_in, 16), its rows (<= 16) of output, y and bias at its first
//! column, y's rows ldy apart.
struct panel_job {
  const uint16_t* panel;
  uint32_t n_in, rows;
  float* y;
  size_t ldy;
  const float* bias;
};

//! y rows [i0, i0 + M) of the panel's columns = x rows [i0, i0 + M) against the panel (+ bias).
template <uint32_t M>
HEARTH_SIMD_INLINE void panel_pass(const panel_job& j, const float* x, uint32_t i0) {
  constexpr uint32_t unroll = M == 1 ? 4 : M <= 3 ? 2 : 1;  // keeps >= 8 independent accumulators
  vec sum[M][2];
  panel_dot<M, unroll>(j.panel, x + size_t{i0} * j.n_in, j.n_in, sum);
  for (uint32_t i = 0; i < M; ++i) {
    float out[panel_rows];
    simd::store(out, sum[i][0]);
    simd::store(out + simd::lanes, sum[i][1]);
    float* yi = j.y + size_t{i0 + i} * j.ldy;
    for (uint32_t r = 0; r < j.rows; ++r) yi[r] = out[r] + (j.bias ? j.bias[r] : 0.0f);
  }
}

HEARTH_SIMD_CLONES
void gemm_panel(const panel_job& j, const float* x, uint32_t m) {
  for (uint32_t i = 0; i < m; i += max_acts) {
    switch (std::min(max_acts, m - i)) {
      case 6:
        panel_pass<6>(j, x, i);
        break;
      case 5:
        panel_pass<5>(j, x, i);
        break;
      case 4:
        panel_pass<4>(j, x, i);
        break;
      case 3:
        panel_pass<3>(j, x, i);
        break;
      case 2:
        panel_pass<2>(j, x, i);
        break;
      default:
        panel_pass<1>(j, x, i);
        break;
    }
  }
}

//! Panel p's rows [0, n) widened into out (n_in, ld): column j of out is row j of the panel.
HEARTH_SIMD_CLONES
void widen_panel(const bf16_matrix& w, uint32_t p, float* out, size_t ld, uint32_t n) {
  const uint16_t* panel = w.panel(p);
  for (uint32_t k = 0; k < w.n_in(); ++k) {
    float col[panel_rows];
    vec lo, hi;
    simd::widen_bf16_pairs(panel + size_t{k} * panel_rows, lo, hi);  // rows 0-7, rows 8-15
    simd::store(col, lo);
    simd::store(col + simd::lanes, hi);
    std::memcpy(out + k * ld, col, n * sizeof(float));
  }
}

//! The calling thread's buffer for the rounded activations, grown as needed.
float* activation_scratch(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

}  // namespace

bf16_matrix::bf16_matrix(uint32_t n_out, uint32_t n_in) : n_out_(n_out), n_in_(n_in) {
  data_ = alloc_zeroed_big<uint16_t>(bytes());
  if (!data_) throw std::bad_alloc();
}

void bf16_matrix::set_rows(uint32_t first, uint32_t rows, const float* values) {
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t o = first + r;
    uint16_t* dst = data_.get() + size_t{o / panel_rows} * n_in_ * panel_rows + slot_of(o % panel_rows);
    const float* src = values + size_t{r} * n_in_;
    for (uint32_t k = 0; k < n_in_; ++k) dst[size_t{k} * panel_rows] = simd::f32_to_bf16(src[k]);
  }
}

void gemm_bf16w(const bf16_matrix& w, const float* x, float* y, uint32_t m, std::span<const float> bias,
                bf16_kernel kernel) {
  float* xr = activation_scratch(size_t{m} * w.n_in());
  round_to_bf16(x, xr, size_t{m} * w.n_in());
  const float* b = bias.empty() ? nullptr : bias.data();
  if (kernel == bf16_kernel::w16) return bf16_panels::gemm_w16(w, xr, y, m, b);
  parallel_for(
      w.n_panels(),
      [&](size_t i) {
        const auto o0 = static_cast<uint32_t>(i) * panel_rows;
        gemm_panel({w.panel(static_cast<uint32_t>(i)), w.n_in(), std::min(panel_rows, w.n_out() - o0), y + o0,
                    w.n_out(), b ? b + o0 : nullptr},
                   xr, m);
      },
      schedule::streaming);
}

void gemm_bf16_panel(const uint16_t* panel, uint32_t n_in, uint32_t rows, const float* xr, uint32_t m,
                     float* y, size_t ldy, const float* bias) {
  gemm_panel({panel, n_in, rows, y, ldy, bias}, xr, m);
}

void pack_panel(const float* rows, uint32_t n, uint32_t n_in, uint16_t* panel) {
  std::fill(panel, panel + size_t{n_in} * panel_rows, uint16_t{0});
  for (uint32_t r = 0; r < n; ++r) {
    uint16_t* dst = panel + slot_of(r);
    const float* src = rows + size_t{r} * n_in;
    for (uint32_t k = 0; k < n_in; ++k) dst[size_t{k} * panel_rows] = simd::f32_to_bf16(src[k]);
  }
}

void widen_columns(const bf16_matrix& w, uint32_t first, uint32_t n, float* out) {
  const uint32_t p0 = first / panel_rows, n_panels = (n + panel_rows - 1) / panel_rows;
  parallel_for(n_panels, [&](size_t i) {
    const auto c = static_cast<uint32_t>(i) * panel_rows;
    widen_panel(w, p0 + static_cast<uint32_t>(i), out + c, n, std::min(panel_rows, n - c));
  });
}

namespace {

HEARTH_SIMD_CLONES
void to_bf16_run(const float* x, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = simd::f32_to_bf16(x[i]);
}

HEARTH_SIMD_CLONES
void round_to_bf16_run(const float* x, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = simd::bf16_to_f32(simd::f32_to_bf16(x[i]));
}

//! fn over [0, n) in runs of `run` elements spread over the threads: a prefill chunk's activations
//! rounded on one thread kept the other waiting (2.5-3 % of `small`'s prefill and batch-16 steps).
template <class Fn>
void in_runs(size_t n, const Fn& fn) {
  constexpr size_t run = 16384;
  if (n <= run) return fn(size_t{0}, n);
  parallel_for((n + run - 1) / run, [&](size_t i) { fn(i * run, std::min(run, n - i * run)); });
}

}  // namespace

void to_bf16(const float* x, uint16_t* out, size_t n) {
  in_runs(n, [&](size_t at, size_t count) { to_bf16_run(x + at, out + at, count); });
}

void round_to_bf16(const float* x, float* out, size_t n) {
  in_runs(n, [&](size_t at, size_t count) { round_to_bf16_run(x + at, out + at, count); });
}

}  // namespace hearth
