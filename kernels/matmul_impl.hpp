#pragma once
// linear's private parts (kernels/matmul.hpp), shared by matmul.cpp (oneDNN's storages and bf16
// panels) and matmul_quant.cpp (weights kept quantized). Internal to kernels/.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <dnnl.hpp>

#include "kernels/bf16_gemm.hpp"
#include "kernels/big_alloc.hpp"
#include "kernels/matmul.hpp"
#include "kernels/quant_dot.hpp"

namespace hearth {
namespace matmul_detail {

using dnnl_dt = dnnl::memory::data_type;
using dnnl_tag = dnnl::memory::format_tag;

constexpr uint32_t max_rows_per_call = 256;
// A prefill-sized batch: the compute-bound case, where the blocked layout matters most.
constexpr uint32_t layout_m = 64;
// widened-f32: the f32 bytes of one widened column slice (a core's share of L2 and more).
constexpr size_t slice_bytes = size_t{1} << 20;
// Rows dequantized at a time while loading (bounds the f32 temporary to ~256 KiB).
constexpr size_t dequant_block_elems = 64 * 1024;

inline dnnl::memory::dims dims2(uint64_t a, uint64_t b) {
  return {static_cast<dnnl::memory::dim>(a), static_cast<dnnl::memory::dim>(b)};
}

// The calling thread's buffer number `Slot` of T, grown as needed (x converted to the compute
// type; widened weights).
template <class T, int Slot = 0>
T* scratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// quant-onednn-bf16's slices in the layout oneDNN's bf16 brgemm picks for its weights (blocks
// of 64 columns, each of blocks of 16 k: 8 k pairs x 64 columns x the pair), so that the matmul
// need not repack a plain slice on every call (measured on the AMD EPYC Zen 4: a plain one ran
// at ~75 % of the blocked rate). Columns past n in the last block are padding, never read out.
constexpr auto bf16_blocked = dnnl_tag::BA16a64b2a;
// One oneDNN matmul: x (m, n_in) @ W (n_in, n) -> y (m, n), whose rows lie ldc floats apart.
struct dnnl_gemm {
  dnnl::memory::desc weights;
  uint32_t layout = 0;  // dnnl_ctx::intern_layout(weights)
  uint32_t n = 0;
  uint32_t ldc = 0;
};

//! Whether oneDNN multiplies bf16 weights in bf16_blocked with its brgemm kernels.
bool bf16_blocked_brgemm();

}  // namespace matmul_detail

struct linear::impl {
  uint32_t n_in = 0;
  uint32_t n_out = 0;
  matmul_plan plan;
  matmul_detail::dnnl_dt src_dt =
      matmul_detail::dnnl_dt::f32;  // what oneDNN multiplies: bf16, or f32 (also widened-f32)
  std::vector<float> bias;          // (n_out,) or empty
  // oneDNN's storage: the weights in the pinned layout, all columns in one matmul, in our buffer
  // (huge pages: decode streams them every step).
  big_buffer weight_bytes;
  dnnl::memory weights;  // (n_in, n_out), over weight_bytes
  matmul_detail::dnnl_gemm whole;
  // bf16 panels: the only copy of the weights, and for widened-f32 the column slices they are
  // widened into: slices[0] every slice but the last, slices[1] the last.
  bf16_matrix packed;
  matmul_detail::dnnl_gemm slices[2];
  // Quantized: each part's blocks as the file holds them, read in place (owner keeps them) or
  // from `copy`, and for quant-f32 and quant-onednn-bf16 the slices its rows are dequantized
  // into, as `slices` above: slices[dt][0] every slice but the last, [dt][1] the last, dt 0 f32,
  // 1 bf16.
  struct quant_part {
    tensor_type type;
    const std::byte* data;
    size_t row_bytes;
    uint32_t first_row, n_out;
    matmul_detail::dnnl_gemm slices[2][2];
  };
  std::vector<quant_part> qparts;
  std::vector<std::shared_ptr<const void>> owners;
  std::vector<std::byte> copy;
  quant::isa isa = quant::isa::avx2;
  uint32_t act_group = 32;  // 256 when a part is a K type: its dots need one activation scale per super-block

  void create_native(std::span<const weight_part> parts);
  void create_panels(std::span<const weight_part> parts);
  status<> create_quantized(std::span<const weight_part> parts);
  //! x as oneDNN multiplies it by g: in g's weight type (bf16 by bf16, f32 by f32).
  dnnl::memory::desc src_desc(uint32_t m, const matmul_detail::dnnl_gemm& g) const {
    return {matmul_detail::dims2(m, n_in), static_cast<matmul_detail::dnnl_dt>(g.weights.data.data_type),
            matmul_detail::dnnl_tag::ab};
  }
  dnnl::matmul make_matmul(const matmul_detail::dnnl_gemm& g, uint32_t m) const;
  std::shared_ptr<const dnnl::matmul> matmul_for(const matmul_detail::dnnl_gemm& g, uint32_t m) const;
  //! y (rows, g.n) = x (rows, n_in) @ w (+ b) with prim, made for `rows` rows.
  void execute(const dnnl::matmul& prim, const matmul_detail::dnnl_gemm& g, const void* x,
               const dnnl::memory& w, const float* b, float* y, uint32_t rows) const;
  //! execute() over m rows in chunks of max_rows_per_call; false, having done part of it, when a
  //! primitive cannot be created.
  bool run_rows(const matmul_detail::dnnl_gemm& g, const void* x, const dnnl::memory& w, const float* b,
                float* y, uint32_t m) const;
  void forward_native(const float* x, float* y, uint32_t m) const;
  void forward_dpbf16(const float* x, float* y, uint32_t m) const;
  void forward_panels(const float* x, float* y, uint32_t m, bf16_kernel kernel) const;
  void forward_widened(const float* x, float* y, uint32_t m) const;
  //! With `variant`: isa, or avx512_vnni_zmm (quant-dot-zmm).
  void forward_quant_dot(const float* x, float* y, uint32_t m, quant::isa variant) const;
  //! What multiplies the dequantized slices: oneDNN's f32 or bf16 matmul.
  enum class slice_gemm { onednn_f32, onednn_bf16 };
  void forward_quant_slices(const float* x, float* y, uint32_t m, slice_gemm gemm) const;
  void forward_quant_bf16(const float* x, float* y, uint32_t m) const;
  void forward_quant_dpbf16(const float* x, float* y, uint32_t m) const;
  void dequantize_slice(const quant_part& p, uint32_t c, uint32_t n, bool bf16, void* w) const;
  //! Rows [r, r + rows) of p (rows <= 16), dequantized and rounded to bf16, as columns n0.. of w,
  //! (n_in, N) in bf16_blocked.
  void pack_quant_rows(const quant_part& p, uint32_t r, uint32_t rows, uint32_t n0, uint16_t* w) const;
  //! fn(part, first row, rows) for every group of rows_per_item rows of every part, in parallel.
  template <class Fn>
  void for_each_quant_item(uint32_t rows_per_item, Fn&& fn) const;
  size_t x_row_bytes(const matmul_detail::dnnl_gemm& g) const { return src_desc(1, g).get_size(); }
  const float* bias_at(uint32_t column) const { return bias.empty() ? nullptr : bias.data() + column; }
};

}  // namespace hearth
