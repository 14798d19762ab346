#pragma once
// Matrix work on bf16 weights for CPUs where oneDNN has no bf16 matmul (AVX2): the weights stay
// bf16 in memory (2 bytes each) and are widened to f32 in registers. Internal to kernels/;
// stateless apart from the weights, so the kernels are tested without a model.
//
// Layout: W (n_out, n_in) is stored in panels of 16 output rows; a panel is k-major, 16 weights
// (one per row) for each k: (n_in, 16), 32 bytes per k. One 32-byte load then gives one column
// of the panel, and the kernel needs neither horizontal sums nor a tail loop over k. Within the
// 16, rows r and r + 8 share a 32-bit pair (r in the low half), so that widening the pairs'
// low halves gives rows 0-7 and the high halves rows 8-15, in order. The last panel is padded
// with zero rows.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "kernels/big_alloc.hpp"

namespace hearth {

//! W (n_out, n_in) in bf16, packed in panels of bf16_matrix::panel_rows output rows (see above).
class bf16_matrix {
 public:
  static constexpr uint32_t panel_rows = 16;

  bf16_matrix() = default;
  //! Zero-filled storage for n_out rows of n_in; throws std::bad_alloc.
  bf16_matrix(uint32_t n_out, uint32_t n_in);

  uint32_t n_out() const { return n_out_; }
  uint32_t n_in() const { return n_in_; }
  uint32_t n_panels() const { return (n_out_ + panel_rows - 1) / panel_rows; }
  //! Panel p: (n_in, panel_rows) as described above.
  const uint16_t* panel(uint32_t p) const { return data_.get() + size_t{p} * n_in_ * panel_rows; }
  //! Bytes held, the padding rows of the last panel included.
  size_t bytes() const { return size_t{n_panels()} * n_in_ * panel_rows * sizeof(uint16_t); }

  //! Rows [first, first + rows) = values (rows, n_in), rounded to bf16 (nearest even).
  void set_rows(uint32_t first, uint32_t rows, const float* values);

 private:
  uint32_t n_out_ = 0, n_in_ = 0;
  big_array<uint16_t> data_;
};

//! Our kernels over a bf16_matrix, by vector width. w8: 8 f32 lanes, AVX2's ymm (two SSE registers
//! on older CPUs; AVX-512 CPUs run its x86-64-v4 clone). w16: 16 lanes, one AVX-512 zmm, two panels
//! at a time in up to 24 of its 32 registers; on a CPU without AVX-512 it still runs (as pairs of
//! ymm, spilling), which is how its logic is tested there, but it is only a candidate where
//! AVX-512 is present.
enum class bf16_kernel { w8, w16 };

//! y (m, n_out) = bf16(x) (m, n_in) @ W^T (+ bias (n_out,) unless empty), f32 accumulation.
//! x is rounded to bf16 first, so y is what a bf16 matmul gives, up to summation order. Parallel
//! over panels (parallel_for); all m activation rows are done on a panel while it is in cache,
//! so the batch reads W from memory once. Results do not depend on the thread count.
void gemm_bf16w(const bf16_matrix& w, const float* x, float* y, uint32_t m, std::span<const float> bias,
                bf16_kernel kernel = bf16_kernel::w8);

//! One panel, outside a bf16_matrix: y (m, rows), rows ldy apart, = xr (m, n_in), already rounded
//! to bf16 (round_to_bf16), @ the panel's rows (<= panel_rows) (+ bias (rows,) unless null). One
//! thread: the caller splits the panels.
void gemm_bf16_panel(const uint16_t* panel, uint32_t n_in, uint32_t rows, const float* xr, uint32_t m,
                     float* y, size_t ldy, const float* bias);
//! panel (n_in, panel_rows) in bf16_matrix's panel layout = rows (n <= panel_rows, n_in) rounded to
//! bf16; the rows past n zero.
void pack_panel(const float* rows, uint32_t n, uint32_t n_in, uint16_t* panel);

//! out (n_in, n) f32 row-major = the columns [first, first + n) of W^T, that is rows
//! [first, first + n) of W widened; first is a multiple of panel_rows. Parallel over panels.
void widen_columns(const bf16_matrix& w, uint32_t first, uint32_t n, float* out);

//! out (n,) = x rounded to bf16 (nearest even), as bf16 bits.
void to_bf16(const float* x, uint16_t* out, size_t n);
//! out (n,) = x rounded to bf16 and widened back: what a bf16 matmul sees.
void round_to_bf16(const float* x, float* out, size_t n);

}  // namespace hearth
