#include "kernels/matmul.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include <omp.h>

#include "common/checked.hpp"
#include "kernels/dnnl_context.hpp"

// Primitives, one per batch size. A matmul primitive is built for a fixed m: oneDNN's runtime-M
// primitive (DNNL_RUNTIME_DIM_VAL) falls back to gemm:jit, which on AVX-512 machines is much
// slower at the small m of decode (shared facts). Primitives are cached process-wide by
// (weights layout, m, bias, threads) in dnnl_context, so the layers of a model, which repeat a
// handful of shapes, share them. Exact m up to max_rows_per_call; a larger m runs in chunks of
// max_rows_per_call rows plus one remainder, so a shape has at most max_rows_per_call primitives.
// Measured (docs/threads.md, gemm:jit on AVX2): 256-row chunks cost 12-17% against exact m at
// m = 512-1024, 64-row chunks 20-25%; a bounded number of primitives per shape is worth that.
//
// The weights' layout is fixed once, the one oneDNN picks (format_tag::any) for layout_m rows,
// and every other m's primitive is created with that layout, so one reordered copy serves all.

namespace hearth {
namespace {

using dnnl_dt = dnnl::memory::data_type;
using dnnl_tag = dnnl::memory::format_tag;

constexpr uint32_t max_rows_per_call = 256;
// A prefill-sized batch: the compute-bound case, where the blocked layout matters most.
constexpr uint32_t layout_m = 64;
// Rows dequantized at a time while loading (bounds the f32 temporary to ~256 KiB).
constexpr size_t dequant_block_elems = 64 * 1024;

dnnl::memory::dims dims2(uint64_t a, uint64_t b) {
  return {static_cast<dnnl::memory::dim>(a), static_cast<dnnl::memory::dim>(b)};
}

// Round to nearest even as hearth::fp32_to_bf16, written branch-free so the loops below vectorise.
inline uint16_t bf16_bits(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void to_bf16(const float* x,
                                                                                           uint16_t* out,
                                                                                           size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = bf16_bits(x[i]);
}

// x rounded to bf16 and widened back: what a bf16 matmul sees, for CPUs that lack one.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void round_to_bf16(
    const float* x, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(uint32_t{bf16_bits(x[i])} << 16);
}

// Whether this CPU runs bf16 matmuls (oneDNN 2.6 needs AVX-512: avx512_core at least). Without
// one, bf16 is emulated exactly: weights and x rounded to bf16, multiplied in f32 (the products
// of two bf16 values are exact in f32), so results match a bf16 matmul up to summation order.
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

// The calling thread's buffer for x converted to the compute type, grown as needed.
template <class T>
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

struct linear::impl {
  uint32_t n_in = 0;
  uint32_t n_out = 0;
  dnnl_dt src_dt = dnnl_dt::f32;  // what oneDNN multiplies: bf16, or f32 (also for emulated bf16)
  bool emulated_bf16 = false;
  dnnl::memory weights;  // (n_in, n_out) in the pinned blocked layout
  dnnl::memory bias;     // (1, n_out) f32, or empty
  uint32_t layout = 0;   // dnnl_ctx::intern_layout(weights desc)
  // m = 1, made at load: forward falls back to it row by row if a primitive cannot be created.
  std::shared_ptr<const dnnl::matmul> row_matmul;

  dnnl::matmul make_matmul(uint32_t m) const;
  std::shared_ptr<const dnnl::matmul> matmul_for(uint32_t m) const;
  void run(const dnnl::matmul& prim, const void* x, float* y, uint32_t m) const;
};

dnnl::matmul linear::impl::make_matmul(uint32_t m) const {
  const dnnl::memory::desc src(dims2(m, n_in), src_dt, dnnl_tag::ab);
  const dnnl::memory::desc dst(dims2(m, n_out), dnnl_dt::f32, dnnl_tag::ab);
  const auto desc = bias ? dnnl::matmul::desc(src, weights.get_desc(), bias.get_desc(), dst)
                         : dnnl::matmul::desc(src, weights.get_desc(), dst);
  return dnnl::matmul(dnnl::matmul::primitive_desc(desc, dnnl_ctx::engine()));
}

std::shared_ptr<const dnnl::matmul> linear::impl::matmul_for(uint32_t m) const {
  // oneDNN partitions work by the creating thread's OpenMP thread count: part of the key.
  const dnnl_ctx::matmul_key key{layout, m, bool(bias), omp_get_max_threads()};
  if (auto found = dnnl_ctx::find_matmul(key)) return found;
  try {
    return dnnl_ctx::store_matmul(key, make_matmul(m));
  } catch (const dnnl::error& e) {
    std::fprintf(stderr, "hearth: oneDNN matmul for m=%u failed (%s); running row by row\n", m, e.what());
    return nullptr;
  }
}

void linear::impl::run(const dnnl::matmul& prim, const void* x, float* y, uint32_t m) const {
  const auto& eng = dnnl_ctx::engine();
  // oneDNN takes non-const handles; it only reads the source.
  dnnl::memory src({dims2(m, n_in), src_dt, dnnl_tag::ab}, eng, const_cast<void*>(x));
  dnnl::memory dst({dims2(m, n_out), dnnl_dt::f32, dnnl_tag::ab}, eng, y);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
  if (bias) args.emplace(DNNL_ARG_BIAS, bias);
  prim.execute(dnnl_ctx::stream(), args);
}

namespace {

// Converts the stacked rows into a plain (n_in, n_out) "ba" buffer of `dt` (W (n_out, n_in)
// row-major is W^T in ba), then reorders it into `weights`' layout.
void load_weights(std::span<const weight_part> parts, uint32_t n_in, uint32_t n_out, dnnl_dt dt,
                  bool round_bf16, dnnl::memory& weights) {
  const size_t n = size_t{n_in} * n_out;
  const dnnl::memory::desc plain_md(dims2(n_in, n_out), dt, dnnl_tag::ba);
  std::vector<float> plain_f32(dt == dnnl_dt::f32 ? n : 0);
  std::vector<uint16_t> plain_bf16(dt == dnnl_dt::bf16 ? n : 0);
  for_each_row_block(parts, n_in, [&](size_t row, size_t rows, const float* v) {
    const size_t count = rows * n_in, at = row * n_in;
    if (dt == dnnl_dt::bf16) {
      for (size_t i = 0; i < count; ++i) plain_bf16[at + i] = fp32_to_bf16(v[i]);
    } else if (round_bf16) {
      for (size_t i = 0; i < count; ++i) plain_f32[at + i] = bf16_to_fp32(fp32_to_bf16(v[i]));
    } else {
      std::memcpy(&plain_f32[at], v, count * sizeof(float));
    }
  });
  void* data = dt == dnnl_dt::bf16 ? static_cast<void*>(plain_bf16.data()) : plain_f32.data();
  dnnl::memory plain(plain_md, dnnl_ctx::engine(), data);
  dnnl::reorder(plain, weights).execute(dnnl_ctx::stream(), plain, weights);
  dnnl_ctx::stream().wait();
}

dnnl::memory make_bias(std::span<const weight_part> parts, uint32_t n_out) {
  const bool any = std::any_of(parts.begin(), parts.end(), [](const auto& p) { return !p.bias.empty(); });
  if (!any) return {};
  dnnl::memory bias({dims2(1, n_out), dnnl_dt::f32, dnnl_tag::ab}, dnnl_ctx::engine());
  float* out = static_cast<float*>(bias.get_data_handle());
  for (const auto& part : parts) {
    if (part.bias.empty())
      std::fill_n(out, part.n_out, 0.0f);
    else
      std::copy(part.bias.begin(), part.bias.end(), out);
    out += part.n_out;
  }
  return bias;
}

}  // namespace

result<linear> linear::create(std::span<const weight_part> parts, uint32_t n_in, compute_type ct) {
  uint64_t n_out = 0;
  if (auto ok = check_parts(parts, n_in, n_out); !ok) return ok.error();
  auto p = std::make_unique<impl>();
  p->n_in = n_in;
  p->n_out = static_cast<uint32_t>(n_out);
  p->emulated_bf16 = ct == compute_type::bf16 && !bf16_matmul_supported();
  p->src_dt = ct == compute_type::bf16 && !p->emulated_bf16 ? dnnl_dt::bf16 : dnnl_dt::f32;
  try {
    p->bias = make_bias(parts, p->n_out);
    // Let oneDNN pick the weights layout for layout_m rows, then pin it for every m.
    const dnnl::memory::desc src(dims2(layout_m, n_in), p->src_dt, dnnl_tag::ab);
    const dnnl::memory::desc wei(dims2(n_in, n_out), p->src_dt, dnnl_tag::any);
    const dnnl::memory::desc dst(dims2(layout_m, n_out), dnnl_dt::f32, dnnl_tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), dnnl_ctx::engine());
    p->weights = dnnl::memory(pd.weights_desc(), dnnl_ctx::engine());
    load_weights(parts, n_in, p->n_out, p->src_dt, p->emulated_bf16, p->weights);
    p->layout = dnnl_ctx::intern_layout(pd.weights_desc());
    // The fallback must exist, and it proves the pinned layout serves the smallest m as well.
    p->row_matmul = std::make_shared<const dnnl::matmul>(p->make_matmul(1));
  } catch (const dnnl::error& e) {
    return error{errc::unsupported, std::string("linear: oneDNN: ") + e.what()};
  } catch (const std::bad_alloc&) {
    return error{errc::limit_exceeded, "linear: out of memory converting the weights"};
  }
  return linear(std::move(p));
}

void linear::forward(const float* x, float* y, uint32_t m) const {
  assert(m >= 1 && "linear::forward: m = 0");
  const impl& p = *impl_;
  const size_t n_x = size_t{m} * p.n_in;
  const void* src = x;
  size_t src_row_bytes = size_t{p.n_in} * sizeof(float);
  if (p.src_dt == dnnl_dt::bf16) {
    uint16_t* buf = scratch<uint16_t>(n_x);
    to_bf16(x, buf, n_x);
    src = buf;
    src_row_bytes = size_t{p.n_in} * sizeof(uint16_t);
  } else if (p.emulated_bf16) {
    float* buf = scratch<float>(n_x);
    round_to_bf16(x, buf, n_x);
    src = buf;
  }
  const auto* src_bytes = static_cast<const std::byte*>(src);
  for (uint32_t r = 0; r < m; r += max_rows_per_call) {
    const uint32_t rows = std::min(max_rows_per_call, m - r);
    const std::byte* chunk_x = src_bytes + r * src_row_bytes;
    float* chunk_y = y + size_t{r} * p.n_out;
    if (auto prim = p.matmul_for(rows)) {
      p.run(*prim, chunk_x, chunk_y, rows);
    } else {
      for (uint32_t i = 0; i < rows; ++i)
        p.run(*p.row_matmul, chunk_x + i * src_row_bytes, chunk_y + size_t{i} * p.n_out, 1);
    }
  }
  dnnl_ctx::stream().wait();
}

uint32_t linear::n_in() const {
  return impl_->n_in;
}
uint32_t linear::n_out() const {
  return impl_->n_out;
}
size_t linear::weight_bytes() const {
  return impl_->weights.get_desc().get_size() + (impl_->bias ? impl_->bias.get_desc().get_size() : 0);
}

linear::linear(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
linear::linear(linear&&) noexcept = default;
linear& linear::operator=(linear&&) noexcept = default;
linear::~linear() = default;

}  // namespace hearth
