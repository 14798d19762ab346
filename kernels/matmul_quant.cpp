// linear's paths over weights kept quantized (kernels/matmul_impl.hpp): the dots, bf16 panels for
// our kernel, and slices dequantized for oneDNN's matmul.
#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/dnnl_context.hpp"
#include "kernels/dpbf16_matmul.hpp"
#include "kernels/matmul_impl.hpp"
#include "kernels/parallel.hpp"

namespace hearth {
using namespace matmul_detail;

namespace {}  // namespace

namespace matmul_detail {

// Whether oneDNN multiplies bf16 weights in bf16_blocked with its brgemm kernels (bf16 hardware):
// elsewhere it would take a slow path or refuse them.
bool bf16_blocked_brgemm() {
  static const bool supported = [] {
    try {
      const dnnl::memory::desc a(dims2(16, 64), dnnl_dt::bf16, dnnl_tag::ab);
      const dnnl::memory::desc b(dims2(64, 64), dnnl_dt::bf16, bf16_blocked);
      const dnnl::memory::desc c(dims2(16, 64), dnnl_dt::f32, dnnl_tag::ab);
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), dnnl_ctx::engine());
      return std::string(pd.impl_info_str()).rfind("brg", 0) == 0;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return supported;
}

}  // namespace matmul_detail

// Rows per work item of the quantized dots: a few KiB of weights, and enough items for the threads.
constexpr uint32_t quant_rows_per_item = 16;
static_assert(quant_rows_per_item == bf16_matrix::panel_rows, "quant-bf16 packs one item into one panel");

template <class Fn>
void linear::impl::for_each_quant_item(uint32_t rows_per_item, Fn&& fn) const {
  size_t items = 0;
  for (const auto& p : qparts) items += (p.n_out + rows_per_item - 1) / rows_per_item;
  parallel_for(
      items,
      [&](size_t item) {
        for (const auto& p : qparts) {
          const size_t here = (p.n_out + rows_per_item - 1) / rows_per_item;
          if (item >= here) {
            item -= here;
            continue;
          }
          const auto r0 = static_cast<uint32_t>(item) * rows_per_item;
          return fn(p, r0, std::min(rows_per_item, p.n_out - r0));
        }
      },
      schedule::streaming);
}

void linear::impl::forward_quant_dot(const float* x, float* y, uint32_t m, quant::isa variant) const {
  const uint32_t nb = n_in / 32;
  quant::act_block* act = scratch<quant::act_block>(size_t{m} * nb);
  float* dsum = scratch<float, 2>(size_t{m} * nb * 2);
  int16_t* bsum = scratch<int16_t, 2>(size_t{m} * nb * 2);
  // The lanes cost as much again as the blocks (a batch of 16 on `1b` q4_k_m: 3.8 % of a step in
  // quantize_activations), and are read only by small batches.
  int8_t* lanes = m <= quant::lanes_max_rows ? scratch<int8_t>(m * quant::lanes_bytes(n_in)) : nullptr;
  // On every thread: on one, the rest of the team would wait (a batch of 16 decodes: 3.5 % of a
  // `1b` q4_k_m step in this loop, and as much again spinning).
  parallel_for(m, [&](size_t i) {
    quant::quantize_activations(variant, x + i * n_in, n_in, act_group, act + i * nb, dsum + i * nb * 2,
                                bsum + i * nb * 2,
                                lanes == nullptr ? nullptr : lanes + i * quant::lanes_bytes(n_in));
  });
  const quant::activations a{act, dsum, bsum, lanes};
  for_each_quant_item(quant_rows_per_item, [&](const quant_part& p, uint32_t r0, uint32_t rows) {
    quant::dot_rows(variant, p.type, p.data + r0 * p.row_bytes, p.row_bytes, rows, n_in, a, m,
                    y + p.first_row + r0, n_out);
  });
  if (bias.empty()) return;
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t o = 0; o < n_out; ++o) y[size_t{i} * n_out + o] += bias[o];
}

// Each group of 16 rows is dequantized once per call into a bf16 panel, which then multiplies
// all m rows, in chunks of max_rows_per_call so that the activations stay in cache.
void linear::impl::forward_quant_bf16(const float* x, float* y, uint32_t m) const {
  float* xr = scratch<float>(size_t{m} * n_in);
  round_to_bf16(x, xr, size_t{m} * n_in);
  for_each_quant_item(quant_rows_per_item, [&](const quant_part& p, uint32_t r0, uint32_t rows) {
    float* values = scratch<float, 3>(size_t{quant_rows_per_item} * n_in);
    uint16_t* panel = scratch<uint16_t, 1>(size_t{bf16_matrix::panel_rows} * n_in);
    quant::dequantize_rows(isa, p.type, p.data + r0 * p.row_bytes, p.row_bytes, rows, n_in, values);
    pack_panel(values, rows, n_in, panel);
    const float* b = bias_at(p.first_row + r0);
    for (uint32_t i = 0; i < m; i += max_rows_per_call) {
      gemm_bf16_panel(panel, n_in, rows, xr + size_t{i} * n_in, std::min(max_rows_per_call, m - i),
                      y + size_t{i} * n_out + p.first_row + r0, n_out, b);
    }
  });
}

// Each slice of columns is dequantized (in parallel, a group of rows per item) into one buffer,
// f32 or bf16, that oneDNN's matmul then multiplies by all m rows.
void linear::impl::forward_quant_slices(const float* x, float* y, uint32_t m, slice_gemm gemm) const {
  const bool bf16 = gemm == slice_gemm::onednn_bf16;
  const void* src = x;
  if (bf16) {
    uint16_t* buf = scratch<uint16_t>(size_t{m} * n_in);  // whole 32-blocks: no k padding
    to_bf16(x, buf, size_t{m} * n_in);
    src = buf;
  }
  size_t bytes = 0;  // the largest slice, with a blocked slice's padding
  for (const auto& p : qparts)
    for (const auto& g : p.slices[bf16]) bytes = std::max(bytes, g.weights.get_size());
  void* w = scratch<std::byte, 1>(bytes);
  for (const auto& p : qparts) {
    for (uint32_t c = 0; c < p.n_out; c += p.slices[bf16][0].n) {
      const dnnl_gemm& g = p.slices[bf16][c + p.slices[bf16][0].n < p.n_out ? 0 : 1];
      dequantize_slice(p, c, g.n, bf16, w);
      const float* b = bias_at(p.first_row + c);
      // oneDNN 2.6 multiplies blocked weights only into a dense y (else its reference
      // implementation): bf16 slices write theirs here, then into y's columns.
      float* out = bf16 ? scratch<float, 4>(size_t{m} * g.n) : y + p.first_row + c;
      const bool ran = run_rows(g, src, dnnl::memory(g.weights, dnnl_ctx::engine(), w), b, out, m);
      dnnl_ctx::stream().wait();  // before the next slice overwrites w
      for (uint32_t i = 0; bf16 && ran && i < m; ++i)
        std::memcpy(y + size_t{i} * n_out + p.first_row + c, out + size_t{i} * g.n, g.n * sizeof(float));
      if (!ran) return forward_quant_dot(x, y, m, isa);
    }
  }
}

// Rows [c, c + n) of p into w: f32 rows (oneDNN's ba), or bf16 in bf16_blocked.
void linear::impl::dequantize_slice(const quant_part& p, uint32_t c, uint32_t n, bool bf16, void* w) const {
  parallel_for((n + quant_rows_per_item - 1) / quant_rows_per_item, [&](size_t item) {
    const auto r = static_cast<uint32_t>(item) * quant_rows_per_item;
    const uint32_t rows = std::min(quant_rows_per_item, n - r);
    if (!bf16) {
      quant::dequantize_rows(isa, p.type, p.data + (c + r) * p.row_bytes, p.row_bytes, rows, n_in,
                             static_cast<float*>(w) + r * n_in);
      return;
    }
    pack_quant_rows(p, c + r, rows, r, static_cast<uint16_t*>(w));
  });
}

// A K type's super-block of each row at a time, through an f32 tile that stays in L1.
constexpr uint32_t pack_tile_k = 256;

void linear::impl::pack_quant_rows(const quant_part& p, uint32_t r, uint32_t rows, uint32_t n0,
                                   uint16_t* w) const {
  float* tile = scratch<float, 3>(size_t{quant_rows_per_item} * pack_tile_k);
  const std::byte* blocks = p.data + r * p.row_bytes;
  const size_t tile_bytes = *bytes_for(p.type, pack_tile_k);  // n_in is a multiple of the block size
  for (uint32_t k0 = 0; k0 < n_in; k0 += pack_tile_k, blocks += tile_bytes) {
    const uint32_t n_k = std::min(pack_tile_k, n_in - k0);
    quant::dequantize_rows(isa, p.type, blocks, p.row_bytes, rows, n_k, tile);
    dpbf16_pack_rows(tile, n_k, rows, k0, n_k, n_in, n0, w);
  }
}

// quant-dpbf16: each block of 64 rows (a column block of dpbf16's layout) is dequantized into
// bf16 by the thread that then multiplies it by all m rows, from its own L2. Slices dequantized
// by both threads and then multiplied by both moved most of their cache lines between the cores
// and back: the pack that wrote them took 27 % of a 1b q4_k_m prefill chunk of 128 rows, where
// it costs ~0.1 ns a weight alone (AMD EPYC Zen 4).
void linear::impl::forward_quant_dpbf16(const float* x, float* y, uint32_t m) const {
  uint16_t* xb = scratch<uint16_t>(size_t{m} * n_in);  // whole 32-blocks: no k padding
  to_bf16(x, xb, size_t{m} * n_in);
  for_each_quant_item(dpbf16_block_cols, [&](const quant_part& p, uint32_t r0, uint32_t rows) {
    uint16_t* block = scratch<uint16_t, 1>(size_t{dpbf16_block_cols} * n_in);
    // Columns past `rows` are computed, never stored: zeros, not what an earlier call left.
    if (rows < dpbf16_block_cols) std::fill_n(block, size_t{dpbf16_block_cols} * n_in, uint16_t{0});
    for (uint32_t g = 0; g < rows; g += quant_rows_per_item)
      pack_quant_rows(p, r0 + g, std::min(quant_rows_per_item, rows - g), g, block);
    dpbf16_matmul_block(block, n_in, rows, xb, m, bias_at(p.first_row + r0), y + p.first_row + r0, n_out);
  });
}

// Quantized: the parts' blocks in place when their owner keeps them, else one copy.
status<> linear::impl::create_quantized(std::span<const weight_part> parts) {
  if (!quant::isa_available(quant::isa::avx2))
    return error{errc::unsupported, "linear: quantized weights need AVX2 (kept as stored, dotted in 8 bits)"};
  isa = quant::best_isa();
  const bool owned =
      std::all_of(parts.begin(), parts.end(), [](const auto& p) { return p.owner != nullptr; });
  if (!owned) {
    for (const auto& p : parts) copy.insert(copy.end(), p.data.begin(), p.data.end());
  }
  size_t at = 0;
  uint32_t first_row = 0;
  for (const auto& part : parts) {
    if (!quant::has_dot(part.type))
      return error{errc::unsupported,
                   std::string("linear: a ") + traits_of(part.type).name + " part cannot be kept quantized"};
    quant_part q{part.type,
                 owned ? part.data.data() : copy.data() + at,
                 *bytes_for(part.type, n_in),
                 first_row,
                 part.n_out,
                 {}};
    for (int dt = 0; dt < 2; ++dt) {
      const uint32_t align = dt == 0 ? 16 : 64;  // bf16: whole blocks of bf16_blocked
      const size_t fit = slice_bytes / ((dt == 0 ? 4 : 2) * size_t{n_in}) / align * align;
      const uint32_t cols = static_cast<uint32_t>(std::max<size_t>(fit, align));
      const uint32_t first = std::min(cols, part.n_out), last = part.n_out - (part.n_out - 1) / cols * cols;
      for (int i = 0; i < 2; ++i) {
        const uint32_t n = i == 0 ? first : last;
        const dnnl::memory::desc wei = dt == 0
                                           ? dnnl::memory::desc(dims2(n_in, n), dnnl_dt::f32, dnnl_tag::ba)
                                           : dnnl::memory::desc(dims2(n_in, n), dnnl_dt::bf16, bf16_blocked);
        q.slices[dt][i] = {wei, dnnl_ctx::intern_layout(wei), n, dt == 0 ? n_out : n};
      }
    }
    qparts.push_back(q);
    if (traits_of(part.type).block_size == 256) act_group = 256;
    if (owned) owners.push_back(part.owner);
    at += part.data.size();
    first_row += part.n_out;
  }
  return {};
}

}  // namespace hearth
