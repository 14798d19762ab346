#include "kernels/matmul.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <emmintrin.h>
#include <omp.h>

#include "common/checked.hpp"
#include "kernels/bf16_gemm.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/dnnl_context.hpp"
#include "kernels/dpbf16_matmul.hpp"
#include "kernels/matmul_impl.hpp"
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
using namespace matmul_detail;
namespace {

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
    case matmul_path::quant_dot_zmm:
      return quant::isa_available(quant::isa::avx512_vnni_zmm);
    case matmul_path::quant_onednn_bf16:
      // bf16 hardware: its slices are packed by dpbf16_pack_rows
      return quant::isa_available(quant::isa::avx2) && bf16_blocked_brgemm() && dpbf16_available();
    case matmul_path::hearth_dpbf16:  // its weights pinned to bf16_blocked, for oneDNN's paths beside it
      return dpbf16_available() && bf16_blocked_brgemm();
    case matmul_path::quant_dpbf16:
      return quant::isa_available(quant::isa::avx2) && dpbf16_available();
    case matmul_path::hearth_w16:  // x86-64-v4, which its clone is built for (Clang has no name for it)
      return cpu_has(cpu_feature::avx512f) && cpu_has(cpu_feature::avx512bw) &&
             cpu_has(cpu_feature::avx512dq) && cpu_has(cpu_feature::avx512vl) &&
             cpu_has(cpu_feature::avx512cd);
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

bool native_bf16() {
  return path_available(matmul_path::onednn_bf16) && dpbf16_available();
}

matmul_plan default_plan(compute_type ct) {
  if (ct == compute_type::f32) return matmul_plan::uniform(matmul_path::onednn_f32);
  // Without bf16 hardware oneDNN 2.6 still takes bf16 matmuls, as gemm:jit at a third of our
  // kernel's rate (Intel Xeon, AVX-512 VNNI: 44-53 against its f32's 215-258 GFLOP/s): the plan a
  // tuner falls back on when its timings cannot tell the paths apart must not be that one.
  if (!native_bf16()) return matmul_plan::uniform(matmul_path::hearth_w8);
  // With it, decode sizes take our kernel, which reads ahead through the weights: in steps it beat
  // oneDNN by more than one call's timing shows (AMD EPYC Zen 5, alternating runs: small's batch-1
  // step 4.68 against 5.14 ms, medians of 5, where the tuner had timed oneDNN faster at m = 1 for
  // 4 of its 5 shapes; 1b's batch-16 step 59-67 against 75-84 ms). Prefill chunks take oneDNN's.
  if (!path_available(matmul_path::hearth_dpbf16)) return matmul_plan::uniform(matmul_path::onednn_bf16);
  return {{matmul_path::hearth_dpbf16, matmul_path::hearth_dpbf16, matmul_path::onednn_bf16,
           matmul_path::onednn_bf16}};
}

namespace {

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
    // Row by row, on this thread's own m = 1 primitive (a primitive runs on its creating thread's
    // scratchpad only: dnnl_context.hpp); load proved the layout serves m = 1.
    const auto row = matmul_for(whole, 1);
    if (!row)
      throw std::runtime_error("linear " + std::to_string(n_in) + " x " + std::to_string(n_out) +
                               ": oneDNN could not create a matmul, even for one row");
    for (uint32_t i = 0; i < m; ++i)
      execute(*row, whole, static_cast<const std::byte*>(src) + i * x_row_bytes(whole), weights, bias_at(0),
              y + size_t{i} * n_out, 1);
  }
  dnnl_ctx::stream().wait();
}

void linear::impl::forward_dpbf16(const float* x, float* y, uint32_t m) const {
  const auto k_pad = static_cast<uint32_t>(weights.get_desc().data.padded_dims[0]);
  uint16_t* xb = scratch<uint16_t>(size_t{m} * k_pad);
  if (k_pad == n_in) {
    // All rows as one run, spread over the threads: row by row, a prefill chunk's rows were
    // rounded on one thread while the other waited.
    to_bf16(x, xb, size_t{m} * n_in);
  } else {
    for (uint32_t i = 0; i < m; ++i) {
      to_bf16(x + size_t{i} * n_in, xb + size_t{i} * k_pad, n_in);
      std::fill(xb + size_t{i} * k_pad + n_in, xb + size_t{i + 1} * k_pad, uint16_t{0});
    }
  }
  dpbf16_matmul(static_cast<const uint16_t*>(weights.get_data_handle()), k_pad, n_out, xb, m, bias_at(0), y,
                n_out);
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

namespace {

// Converts the stacked rows into a plain (n_in, n_out) "ba" buffer of `dt` (W (n_out, n_in)
// row-major is W^T in ba), then reorders it into `weights`' layout.
void load_weights(std::span<const weight_part> parts, uint32_t n_in, uint32_t n_out, dnnl_dt dt,
                  dnnl::memory& weights) {
  const size_t n = size_t{n_in} * n_out;
  const dnnl::memory::desc plain_md(dims2(n_in, n_out), dt, dnnl_tag::ba);
  // Every element is written below, so the buffers are not zeroed first (a sanitizer build
  // zeroes a std::vector element by element: 3 % of a bench run's CPU there).
  const auto plain_f32 = std::make_unique_for_overwrite<float[]>(dt == dnnl_dt::f32 ? n : 0);
  const auto plain_bf16 = std::make_unique_for_overwrite<uint16_t[]>(dt == dnnl_dt::bf16 ? n : 0);
  for_each_row_block(parts, n_in, [&](size_t row, size_t rows, const float* v) {
    const size_t count = rows * n_in, at = row * n_in;
    if (dt == dnnl_dt::bf16) {
      for (size_t i = 0; i < count; ++i) plain_bf16[at + i] = fp32_to_bf16(v[i]);
    } else {
      std::memcpy(plain_f32.get() + at, v, count * sizeof(float));
    }
  });
  void* data = dt == dnnl_dt::bf16 ? static_cast<void*>(plain_bf16.get()) : plain_f32.get();
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

// oneDNN's own bf16 or f32: the weights reordered into the layout it picks for layout_m rows, or
// into bf16_blocked where hearth-dpbf16 reads them too.
void linear::impl::create_native(std::span<const weight_part> parts) {
  const bool gemv =
      std::find(plan.paths.begin(), plan.paths.end(), matmul_path::hearth_dpbf16) != plan.paths.end();
  const dnnl::memory::desc src(dims2(layout_m, n_in), src_dt, dnnl_tag::ab);
  const dnnl::memory::desc wei(dims2(n_in, n_out), src_dt, gemv ? bf16_blocked : dnnl_tag::any);
  const dnnl::memory::desc dst(dims2(layout_m, n_out), dnnl_dt::f32, dnnl_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), dnnl_ctx::engine());
  weight_bytes = alloc_zeroed_big(pd.weights_desc().get_size());
  if (!weight_bytes) throw std::bad_alloc();
  weights = dnnl::memory(pd.weights_desc(), dnnl_ctx::engine(), weight_bytes.get());
  load_weights(parts, n_in, n_out, src_dt, weights);
  whole = {pd.weights_desc(), dnnl_ctx::intern_layout(pd.weights_desc()), n_out, n_out};
  // forward_native's row-by-row fallback needs the pinned layout to serve m = 1: proved here, where
  // a failure refuses the weights (create's catch), not at a step.
  (void)make_matmul(whole, 1);
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
      return impl_->forward_quant_dot(x, y, m, impl_->isa);
    case matmul_path::quant_dot_zmm:
      return impl_->forward_quant_dot(x, y, m, quant::isa::avx512_vnni_zmm);
    case matmul_path::quant_f32:
      return impl_->forward_quant_slices(x, y, m, impl::slice_gemm::onednn_f32);
    case matmul_path::quant_onednn_bf16:
      return impl_->forward_quant_slices(x, y, m, impl::slice_gemm::onednn_bf16);
    case matmul_path::quant_dpbf16:
      return impl_->forward_quant_dpbf16(x, y, m);
    case matmul_path::quant_bf16:
      return impl_->forward_quant_bf16(x, y, m);
    case matmul_path::hearth_dpbf16:
      return impl_->forward_dpbf16(x, y, m);
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

void linear::flush_weights() const {
  const auto flush = [](const void* p, size_t n) {
    for (size_t o = 0; o < n; o += 64) _mm_clflush(static_cast<const char*>(p) + o);
  };
  switch (impl_->plan.storage()) {
    case weight_storage::bf16_panels:
      flush(impl_->packed.panel(0), impl_->packed.bytes());
      break;
    case weight_storage::quantized:
      for (const auto& p : impl_->qparts) flush(p.data, p.n_out * p.row_bytes);
      break;
    default:
      flush(impl_->weights.get_data_handle(), impl_->weights.get_desc().get_size());
  }
  _mm_mfence();
}

linear::linear(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
linear::linear(linear&&) noexcept = default;
linear& linear::operator=(linear&&) noexcept = default;
linear::~linear() = default;

}  // namespace hearth
