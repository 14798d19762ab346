#include "kernels/matmul.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include <omp.h>

#include "common/checked.hpp"
#include "kernels/bf16_gemm.hpp"
#include "kernels/dnnl_context.hpp"
#include "kernels/parallel.hpp"
#include "kernels/quant_dot.hpp"

// Primitives, one per batch size. A matmul primitive is built for a fixed m: oneDNN's runtime-M
// primitive (DNNL_RUNTIME_DIM_VAL) falls back to gemm:jit, which on AVX-512 machines is much
// slower at the small m of decode (docs/threads.md). Primitives are cached process-wide by
// (weights layout, m, bias, threads) in dnnl_context, so a model's layers, which repeat a handful
// of shapes, share them. Exact m up to max_rows_per_call; a larger m runs in chunks of that many
// rows plus one remainder (256-row chunks cost 12-17 % against exact m at m = 512-1024 on gemm:jit,
// AVX2; 64-row chunks 20-25 %): a bounded number of primitives per shape is worth that.
//
// The weights' layout is fixed once, the one oneDNN picks (format_tag::any) for layout_m rows,
// and every other m's primitive is created with that layout, so one reordered copy serves all.
//
// bf16 panels (bf16_gemm.hpp): the weights are kept once, as bf16, at 2 bytes per weight. Our
// kernels multiply them in chunks of max_rows_per_call rows like oneDNN's (each weight panel is
// read once per chunk). widened-f32 widens a column slice of at most slice_bytes at a time and
// runs oneDNN's f32 matmul on it while it is in cache: a pass over every weight per call, which
// only pays where oneDNN's f32 is much faster than our kernels (AVX-512 without bf16: 215-258
// against ~110 GFLOP/s); on AVX2 it lost (56-78 against 92-122 GFLOP/s at m = 48-96,
// docs/threads.md). The tuner measures which.

namespace hearth {
namespace {

using dnnl_dt = dnnl::memory::data_type;
using dnnl_tag = dnnl::memory::format_tag;

constexpr uint32_t max_rows_per_call = 256;
// A prefill-sized batch: the compute-bound case, where the blocked layout matters most.
constexpr uint32_t layout_m = 64;
// widened-f32: the f32 bytes of one widened column slice (a core's share of L2 and more).
constexpr size_t slice_bytes = size_t{1} << 20;
// Rows dequantized at a time while loading (bounds the f32 temporary to ~256 KiB).
constexpr size_t dequant_block_elems = 64 * 1024;

dnnl::memory::dims dims2(uint64_t a, uint64_t b) {
  return {static_cast<dnnl::memory::dim>(a), static_cast<dnnl::memory::dim>(b)};
}

// Whether oneDNN runs bf16 matmuls on this CPU (oneDNN 2.6 needs AVX-512: avx512_core at least;
// without bf16 hardware it accepts them and runs gemm:jit, slowly). Our panel kernels compute bf16
// exactly instead: weights and x rounded to bf16, multiplied in f32 (the products of two bf16
// values are exact in f32), so results match a bf16 matmul up to summation order.
bool bf16_matmul_supported() {
  static const bool supported = [] {
    try {
      const dnnl::memory::desc a(dims2(16, 16), dnnl_dt::bf16, dnnl_tag::ab);
      const dnnl::memory::desc c(dims2(16, 16), dnnl_dt::f32, dnnl_tag::ab);
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, a, c), dnnl_ctx::engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return supported;
}

}  // namespace

bool path_available(matmul_path p) {
  switch (p) {
    case matmul_path::onednn_bf16:
      return bf16_matmul_supported();
    case matmul_path::quant_dot:
    case matmul_path::quant_f32:
    case matmul_path::quant_bf16:
      return quant::isa_available(quant::isa::avx2);
    case matmul_path::quant_onednn_bf16:
      return quant::isa_available(quant::isa::avx2) && bf16_matmul_supported();
    case matmul_path::hearth_w16:  // x86-64-v4, which its clone is built for (Clang has no name for it)
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512cd");
    default:
      return true;
  }
}

std::vector<matmul_path> paths_for(compute_type ct) {
  std::vector<matmul_path> out;
  for (matmul_path p : all_matmul_paths) {
    const bool f32 = storage_of(p) == weight_storage::onednn_f32;
    const bool converted = storage_of(p) != weight_storage::quantized;  // those depend on the file's types
    if (converted && f32 == (ct == compute_type::f32) && path_available(p)) out.push_back(p);
  }
  return out;
}

matmul_plan default_plan(compute_type ct) {
  if (ct == compute_type::f32) return matmul_plan::uniform(matmul_path::onednn_f32);
  return matmul_plan::uniform(path_available(matmul_path::onednn_bf16) ? matmul_path::onednn_bf16
                                                                       : matmul_path::hearth_w8);
}

namespace {

// The calling thread's buffer number `Slot` of T, grown as needed (x converted to the compute
// type; widened weights).
template <class T, int Slot = 0>
T* scratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

status<> check_parts(std::span<const weight_part> parts, uint32_t n_in, uint64_t& n_out_total) {
  if (parts.empty() || n_in == 0) return error{errc::invalid_argument, "linear: no weights or n_in = 0"};
  n_out_total = 0;
  for (const auto& part : parts) {
    const auto traits = traits_of(static_cast<uint32_t>(part.type));
    if (!traits) return error{errc::unsupported, "linear: unknown tensor type"};
    if (part.n_out == 0 || n_in % traits->block_size != 0)
      return error{errc::invalid_argument, std::string("linear: a ") + traits->name + " part of " +
                                               std::to_string(part.n_out) + " rows by " +
                                               std::to_string(n_in) + " is not whole rows of blocks"};
    const auto elems = checked_mul(part.n_out, n_in);
    const auto bytes = elems ? bytes_for(part.type, *elems) : std::nullopt;
    if (!bytes || *bytes != part.data.size())
      return error{errc::invalid_argument, "linear: a part's data size does not match its shape"};
    if (!part.bias.empty() && part.bias.size() != part.n_out)
      return error{errc::invalid_argument, "linear: a part's bias size differs from its rows"};
    n_out_total += part.n_out;
  }
  if (n_out_total > UINT32_MAX) return error{errc::limit_exceeded, "linear: too many rows"};
  return {};
}

// Calls sink(first_row, rows, values (rows, n_in) f32) over all parts' rows, stacked in order.
template <class Sink>
void for_each_row_block(std::span<const weight_part> parts, uint32_t n_in, Sink&& sink) {
  const size_t block_rows = std::max<size_t>(1, dequant_block_elems / n_in);
  std::vector<float> values(block_rows * n_in);
  size_t first_row = 0;
  for (const auto& part : parts) {
    const size_t row_bytes = *bytes_for(part.type, n_in);
    for (size_t r = 0; r < part.n_out; r += block_rows) {
      const size_t rows = std::min<size_t>(block_rows, part.n_out - r);
      dequantize(part.type, part.data.subspan(r * row_bytes, rows * row_bytes),
                 std::span(values.data(), rows * n_in));
      sink(first_row + r, rows, values.data());
    }
    first_row += part.n_out;
  }
}

}  // namespace

// One oneDNN matmul: x (m, n_in) @ W (n_in, n) -> y (m, n), whose rows lie ldc floats apart.
struct dnnl_gemm {
  dnnl::memory::desc weights;
  uint32_t layout = 0;  // dnnl_ctx::intern_layout(weights)
  uint32_t n = 0;
  uint32_t ldc = 0;
};

struct linear::impl {
  uint32_t n_in = 0;
  uint32_t n_out = 0;
  matmul_plan plan;
  dnnl_dt src_dt = dnnl_dt::f32;  // what oneDNN multiplies: bf16, or f32 (also widened-f32)
  std::vector<float> bias;        // (n_out,) or empty
  // oneDNN's storage: the weights in the pinned layout, all columns in one matmul.
  dnnl::memory weights;  // (n_in, n_out)
  dnnl_gemm whole;
  // m = 1, made at load: forward falls back to it row by row if a primitive cannot be created.
  std::shared_ptr<const dnnl::matmul> row_matmul;
  // bf16 panels: the only copy of the weights, and for widened-f32 the column slices they are
  // widened into: slices[0] every slice but the last, slices[1] the last.
  bf16_matrix packed;
  dnnl_gemm slices[2];
  // Quantized: each part's blocks as the file holds them, read in place (owner keeps them) or
  // from `copy`, and for quant-f32 and quant-onednn-bf16 the slices its rows are dequantized
  // into, as `slices` above: slices[dt][0] every slice but the last, [dt][1] the last, dt 0 f32,
  // 1 bf16.
  struct quant_part {
    tensor_type type;
    const std::byte* data;
    size_t row_bytes;
    uint32_t first_row, n_out;
    dnnl_gemm slices[2][2];
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
  dnnl::memory::desc src_desc(uint32_t m, const dnnl_gemm& g) const {
    return {dims2(m, n_in), static_cast<dnnl_dt>(g.weights.data.data_type), dnnl_tag::ab};
  }
  dnnl::matmul make_matmul(const dnnl_gemm& g, uint32_t m) const;
  std::shared_ptr<const dnnl::matmul> matmul_for(const dnnl_gemm& g, uint32_t m) const;
  //! y (rows, g.n) = x (rows, n_in) @ w (+ b) with prim, made for `rows` rows.
  void execute(const dnnl::matmul& prim, const dnnl_gemm& g, const void* x, const dnnl::memory& w,
               const float* b, float* y, uint32_t rows) const;
  //! execute() over m rows in chunks of max_rows_per_call; false, having done part of it, when a
  //! primitive cannot be created.
  bool run_rows(const dnnl_gemm& g, const void* x, const dnnl::memory& w, const float* b, float* y,
                uint32_t m) const;
  void forward_native(const float* x, float* y, uint32_t m) const;
  void forward_panels(const float* x, float* y, uint32_t m, bf16_kernel kernel) const;
  void forward_widened(const float* x, float* y, uint32_t m) const;
  void forward_quant_dot(const float* x, float* y, uint32_t m) const;
  void forward_quant_slices(const float* x, float* y, uint32_t m, bool bf16) const;
  void forward_quant_bf16(const float* x, float* y, uint32_t m) const;
  //! fn(part, first row, rows) for every group of quant_rows_per_item rows of every part, in parallel.
  template <class Fn>
  void for_each_quant_item(Fn&& fn) const;
  size_t x_row_bytes(const dnnl_gemm& g) const { return src_desc(1, g).get_size(); }
  const float* bias_at(uint32_t column) const { return bias.empty() ? nullptr : bias.data() + column; }
};

namespace {

dnnl::memory::desc dst_desc(uint32_t m, const dnnl_gemm& g) {
  return {dims2(m, g.n), dnnl_dt::f32, dims2(g.ldc, 1)};
}

dnnl::memory::desc bias_desc(const dnnl_gemm& g) {
  return {dims2(1, g.n), dnnl_dt::f32, dnnl_tag::ab};
}

}  // namespace

dnnl::matmul linear::impl::make_matmul(const dnnl_gemm& g, uint32_t m) const {
  const auto src = src_desc(m, g);
  const auto desc = bias.empty() ? dnnl::matmul::desc(src, g.weights, dst_desc(m, g))
                                 : dnnl::matmul::desc(src, g.weights, bias_desc(g), dst_desc(m, g));
  return dnnl::matmul(dnnl::matmul::primitive_desc(desc, dnnl_ctx::engine()));
}

std::shared_ptr<const dnnl::matmul> linear::impl::matmul_for(const dnnl_gemm& g, uint32_t m) const {
  // oneDNN partitions work by the creating thread's OpenMP thread count: part of the key.
  const dnnl_ctx::matmul_key key{g.layout, m, !bias.empty(), omp_get_max_threads(), g.ldc};
  if (auto found = dnnl_ctx::find_matmul(key)) return found;
  try {
    return dnnl_ctx::store_matmul(key, make_matmul(g, m));
  } catch (const dnnl::error& e) {
    std::fprintf(stderr, "hearth: oneDNN matmul for m=%u failed (%s); falling back\n", m, e.what());
    return nullptr;
  }
}

void linear::impl::execute(const dnnl::matmul& prim, const dnnl_gemm& g, const void* x, const dnnl::memory& w,
                           const float* b, float* y, uint32_t rows) const {
  const auto& eng = dnnl_ctx::engine();
  // oneDNN takes non-const handles; it only reads the source, weights and bias.
  dnnl::memory src(src_desc(rows, g), eng, const_cast<void*>(x));
  dnnl::memory dst(dst_desc(rows, g), eng, y);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
  if (b) args.emplace(DNNL_ARG_BIAS, dnnl::memory(bias_desc(g), eng, const_cast<float*>(b)));
  prim.execute(dnnl_ctx::stream(), args);
}

bool linear::impl::run_rows(const dnnl_gemm& g, const void* x, const dnnl::memory& w, const float* b,
                            float* y, uint32_t m) const {
  for (uint32_t r = 0; r < m; r += max_rows_per_call) {
    const uint32_t rows = std::min(max_rows_per_call, m - r);
    const auto prim = matmul_for(g, rows);
    if (!prim) return false;
    execute(*prim, g, static_cast<const std::byte*>(x) + r * x_row_bytes(g), w, b, y + size_t{r} * g.ldc,
            rows);
  }
  return true;
}

void linear::impl::forward_native(const float* x, float* y, uint32_t m) const {
  const void* src = x;
  if (src_dt == dnnl_dt::bf16) {
    uint16_t* buf = scratch<uint16_t>(size_t{m} * n_in);
    to_bf16(x, buf, size_t{m} * n_in);
    src = buf;
  }
  if (!run_rows(whole, src, weights, bias_at(0), y, m)) {
    for (uint32_t i = 0; i < m; ++i)
      execute(*row_matmul, whole, static_cast<const std::byte*>(src) + i * x_row_bytes(whole), weights,
              bias_at(0), y + size_t{i} * n_out, 1);
  }
  dnnl_ctx::stream().wait();
}

void linear::impl::forward_panels(const float* x, float* y, uint32_t m, bf16_kernel kernel) const {
  for (uint32_t i = 0; i < m; i += max_rows_per_call) {
    const uint32_t rows = std::min(max_rows_per_call, m - i);
    gemm_bf16w(packed, x + size_t{i} * n_in, y + size_t{i} * n_out, rows, bias, kernel);
  }
}

void linear::impl::forward_widened(const float* x, float* y, uint32_t m) const {
  float* xr = scratch<float>(size_t{m} * n_in);
  round_to_bf16(x, xr, size_t{m} * n_in);
  float* w = scratch<float, 1>(size_t{n_in} * slices[0].n);
  for (uint32_t c = 0; c < n_out; c += slices[0].n) {
    const dnnl_gemm& g = slices[c + slices[0].n < n_out ? 0 : 1];
    widen_columns(packed, c, g.n, w);
    const bool ran = run_rows(g, xr, dnnl::memory(g.weights, dnnl_ctx::engine(), w), bias_at(c), y + c, m);
    dnnl_ctx::stream().wait();  // before the next slice overwrites w
    if (!ran) return forward_panels(x, y, m, bf16_kernel::w8);
  }
}

// Rows per work item of the quantized dots: a few KiB of weights, and enough items for the threads.
constexpr uint32_t quant_rows_per_item = 16;
static_assert(quant_rows_per_item == bf16_matrix::panel_rows, "quant-bf16 packs one item into one panel");

template <class Fn>
void linear::impl::for_each_quant_item(Fn&& fn) const {
  size_t items = 0;
  for (const auto& p : qparts) items += (p.n_out + quant_rows_per_item - 1) / quant_rows_per_item;
  parallel_for(items, [&](size_t item) {
    for (const auto& p : qparts) {
      const size_t here = (p.n_out + quant_rows_per_item - 1) / quant_rows_per_item;
      if (item >= here) {
        item -= here;
        continue;
      }
      const auto r0 = static_cast<uint32_t>(item) * quant_rows_per_item;
      return fn(p, r0, std::min(quant_rows_per_item, p.n_out - r0));
    }
  });
}

void linear::impl::forward_quant_dot(const float* x, float* y, uint32_t m) const {
  const uint32_t nb = n_in / 32;
  quant::act_block* act = scratch<quant::act_block>(size_t{m} * nb);
  float* dsum = scratch<float, 2>(size_t{m} * nb * 2);
  int16_t* bsum = scratch<int16_t, 2>(size_t{m} * nb * 2);
  for (uint32_t i = 0; i < m; ++i)
    quant::quantize_activations(isa, x + size_t{i} * n_in, n_in, act_group, act + size_t{i} * nb,
                                dsum + size_t{i} * nb * 2, bsum + size_t{i} * nb * 2);
  const quant::activations a{act, dsum, bsum};
  for_each_quant_item([&](const quant_part& p, uint32_t r0, uint32_t rows) {
    quant::dot_rows(isa, p.type, p.data + r0 * p.row_bytes, p.row_bytes, rows, n_in, a, m,
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
  for_each_quant_item([&](const quant_part& p, uint32_t r0, uint32_t rows) {
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
void linear::impl::forward_quant_slices(const float* x, float* y, uint32_t m, bool bf16) const {
  const void* src = x;
  if (bf16) {
    uint16_t* buf = scratch<uint16_t>(size_t{m} * n_in);
    to_bf16(x, buf, size_t{m} * n_in);
    src = buf;
  }
  const size_t cols = qparts.front().slices[bf16][0].n;
  void* w = bf16 ? static_cast<void*>(scratch<uint16_t, 1>(n_in * cols)) : scratch<float, 1>(n_in * cols);
  for (const auto& p : qparts) {
    for (uint32_t c = 0; c < p.n_out; c += p.slices[bf16][0].n) {
      const dnnl_gemm& g = p.slices[bf16][c + p.slices[bf16][0].n < p.n_out ? 0 : 1];
      parallel_for((g.n + quant_rows_per_item - 1) / quant_rows_per_item, [&](size_t item) {
        const auto r = static_cast<uint32_t>(item) * quant_rows_per_item;
        const uint32_t rows = std::min(quant_rows_per_item, g.n - r);
        const std::byte* blocks = p.data + (c + r) * p.row_bytes;
        if (!bf16) {
          quant::dequantize_rows(isa, p.type, blocks, p.row_bytes, rows, n_in,
                                 static_cast<float*>(w) + r * n_in);
          return;
        }
        float* values = scratch<float, 3>(size_t{quant_rows_per_item} * n_in);
        quant::dequantize_rows(isa, p.type, blocks, p.row_bytes, rows, n_in, values);
        to_bf16(values, static_cast<uint16_t*>(w) + size_t{r} * n_in, size_t{rows} * n_in);
      });
      const float* b = bias_at(p.first_row + c);
      const bool ran =
          run_rows(g, src, dnnl::memory(g.weights, dnnl_ctx::engine(), w), b, y + p.first_row + c, m);
      dnnl_ctx::stream().wait();  // before the next slice overwrites w
      if (!ran) return forward_quant_dot(x, y, m);
    }
  }
}

namespace {

// Converts the stacked rows into a plain (n_in, n_out) "ba" buffer of `dt` (W (n_out, n_in)
// row-major is W^T in ba), then reorders it into `weights`' layout.
void load_weights(std::span<const weight_part> parts, uint32_t n_in, uint32_t n_out, dnnl_dt dt,
                  dnnl::memory& weights) {
  const size_t n = size_t{n_in} * n_out;
  const dnnl::memory::desc plain_md(dims2(n_in, n_out), dt, dnnl_tag::ba);
  std::vector<float> plain_f32(dt == dnnl_dt::f32 ? n : 0);
  std::vector<uint16_t> plain_bf16(dt == dnnl_dt::bf16 ? n : 0);
  for_each_row_block(parts, n_in, [&](size_t row, size_t rows, const float* v) {
    const size_t count = rows * n_in, at = row * n_in;
    if (dt == dnnl_dt::bf16) {
      for (size_t i = 0; i < count; ++i) plain_bf16[at + i] = fp32_to_bf16(v[i]);
    } else {
      std::memcpy(&plain_f32[at], v, count * sizeof(float));
    }
  });
  void* data = dt == dnnl_dt::bf16 ? static_cast<void*>(plain_bf16.data()) : plain_f32.data();
  dnnl::memory plain(plain_md, dnnl_ctx::engine(), data);
  dnnl::reorder(plain, weights).execute(dnnl_ctx::stream(), plain, weights);
  dnnl_ctx::stream().wait();
}

std::vector<float> stack_bias(std::span<const weight_part> parts) {
  const bool any = std::any_of(parts.begin(), parts.end(), [](const auto& p) { return !p.bias.empty(); });
  std::vector<float> bias;
  if (!any) return bias;
  for (const auto& part : parts) {
    if (part.bias.empty())
      bias.insert(bias.end(), part.n_out, 0.0f);
    else
      bias.insert(bias.end(), part.bias.begin(), part.bias.end());
  }
  return bias;
}

}  // namespace

// oneDNN's own bf16 or f32: the weights reordered into the layout it picks for layout_m rows.
void linear::impl::create_native(std::span<const weight_part> parts) {
  const dnnl::memory::desc src(dims2(layout_m, n_in), src_dt, dnnl_tag::ab);
  const dnnl::memory::desc wei(dims2(n_in, n_out), src_dt, dnnl_tag::any);
  const dnnl::memory::desc dst(dims2(layout_m, n_out), dnnl_dt::f32, dnnl_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), dnnl_ctx::engine());
  weights = dnnl::memory(pd.weights_desc(), dnnl_ctx::engine());
  load_weights(parts, n_in, n_out, src_dt, weights);
  whole = {pd.weights_desc(), dnnl_ctx::intern_layout(pd.weights_desc()), n_out, n_out};
  // The fallback must exist, and it proves the pinned layout serves the smallest m as well.
  row_matmul = std::make_shared<const dnnl::matmul>(make_matmul(whole, 1));
}

// bf16 panels: the weights packed as bf16, and the slice shapes for widening them.
void linear::impl::create_panels(std::span<const weight_part> parts) {
  packed = bf16_matrix(n_out, n_in);
  for_each_row_block(parts, n_in, [&](size_t row, size_t rows, const float* v) {
    packed.set_rows(static_cast<uint32_t>(row), static_cast<uint32_t>(rows), v);
  });
  if (std::find(plan.paths.begin(), plan.paths.end(), matmul_path::widened_f32) == plan.paths.end()) return;
  const size_t fit = slice_bytes / (sizeof(float) * n_in) / bf16_matrix::panel_rows * bf16_matrix::panel_rows;
  const uint32_t cols = static_cast<uint32_t>(std::clamp<size_t>(fit, bf16_matrix::panel_rows, n_out));
  const uint32_t last = n_out - (n_out - 1) / cols * cols;
  for (int i = 0; i < 2; ++i) {
    const uint32_t n = i == 0 ? cols : last;
    const dnnl::memory::desc wei(dims2(n_in, n), dnnl_dt::f32, dnnl_tag::ab);
    slices[i] = {wei, dnnl_ctx::intern_layout(wei), n, n_out};
  }
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
      const size_t fit = slice_bytes / ((dt == 0 ? 4 : 2) * size_t{n_in}) / 16 * 16;
      const uint32_t cols = static_cast<uint32_t>(std::clamp<size_t>(fit, 16, part.n_out));
      const uint32_t last = part.n_out - (part.n_out - 1) / cols * cols;
      for (int i = 0; i < 2; ++i) {
        const uint32_t n = i == 0 ? cols : last;
        const dnnl::memory::desc wei(dims2(n_in, n), dt == 0 ? dnnl_dt::f32 : dnnl_dt::bf16,
                                     dnnl_tag::ba);  // dequantized rows
        q.slices[dt][i] = {wei, dnnl_ctx::intern_layout(wei), n, n_out};
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

result<linear> linear::create(std::span<const weight_part> parts, uint32_t n_in, const matmul_plan& plan) {
  uint64_t n_out = 0;
  if (auto ok = check_parts(parts, n_in, n_out); !ok) return ok.error();
  if (!plan.consistent())
    return error{errc::unsupported, "linear: plan " + describe(plan) + " mixes weight storages"};
  auto p = std::make_unique<impl>();
  p->n_in = n_in;
  p->n_out = static_cast<uint32_t>(n_out);
  p->plan = plan;
  p->src_dt = plan.storage() == weight_storage::onednn_bf16 ? dnnl_dt::bf16 : dnnl_dt::f32;
  try {
    p->bias = stack_bias(parts);
    if (plan.storage() == weight_storage::quantized) {
      if (auto st = p->create_quantized(parts); !st) return st.error();
    } else if (plan.storage() == weight_storage::bf16_panels) {
      p->create_panels(parts);
    } else {
      p->create_native(parts);
    }
  } catch (const dnnl::error& e) {
    return error{errc::unsupported, std::string("linear: oneDNN: ") + e.what()};
  } catch (const std::bad_alloc&) {
    return error{errc::limit_exceeded, "linear: out of memory converting the weights"};
  }
  return linear(std::move(p));
}

result<linear> linear::create(std::span<const weight_part> parts, uint32_t n_in, compute_type ct) {
  return create(parts, n_in, default_plan(ct));
}

void linear::forward(const float* x, float* y, uint32_t m) const {
  assert(m >= 1 && "linear::forward: m = 0");
  switch (impl_->plan.path_for(m)) {
    case matmul_path::hearth_w8:
      return impl_->forward_panels(x, y, m, bf16_kernel::w8);
    case matmul_path::hearth_w16:
      return impl_->forward_panels(x, y, m, bf16_kernel::w16);
    case matmul_path::widened_f32:
      return impl_->forward_widened(x, y, m);
    case matmul_path::quant_dot:
      return impl_->forward_quant_dot(x, y, m);
    case matmul_path::quant_f32:
      return impl_->forward_quant_slices(x, y, m, false);
    case matmul_path::quant_onednn_bf16:
      return impl_->forward_quant_slices(x, y, m, true);
    case matmul_path::quant_bf16:
      return impl_->forward_quant_bf16(x, y, m);
    default:
      return impl_->forward_native(x, y, m);
  }
}

uint32_t linear::n_in() const {
  return impl_->n_in;
}
uint32_t linear::n_out() const {
  return impl_->n_out;
}
const matmul_plan& linear::plan() const {
  return impl_->plan;
}
size_t linear::weight_bytes() const {
  size_t matrix = 0;
  switch (impl_->plan.storage()) {
    case weight_storage::bf16_panels:
      matrix = impl_->packed.bytes();
      break;
    case weight_storage::quantized:
      for (const auto& p : impl_->qparts) matrix += p.n_out * p.row_bytes;
      break;
    default:
      matrix = impl_->weights.get_desc().get_size();
  }
  return matrix + impl_->bias.size() * sizeof(float);
}

linear::linear(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
linear::linear(linear&&) noexcept = default;
linear& linear::operator=(linear&&) noexcept = default;
linear::~linear() = default;

}  // namespace hearth
