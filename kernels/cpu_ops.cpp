#include "kernels/cpu_ops.hpp"

#include <cassert>
#include <cmath>
#include <cstring>
#include <functional>

#include "kernels/parallel.hpp"
#include "kernels/reference_ops.hpp"
#include "kernels/simd.hpp"

namespace hearth::ops {

namespace {

//! Runs fn(r0, r1) over ranges of rows with about `min_chunk` floats each: a decode step's single
//! row runs inline, a prefill chunk's rows are spread over the worker's threads.
void for_row_ranges(uint32_t rows, size_t row_floats, const std::function<void(uint32_t, uint32_t)>& fn) {
  constexpr size_t min_chunk = size_t{1} << 15;
  const uint32_t per_range =
      static_cast<uint32_t>(std::max<size_t>(1, min_chunk / std::max<size_t>(1, row_floats)));
  const uint32_t n_ranges = (rows + per_range - 1) / per_range;
  if (n_ranges <= 1) {
    fn(0, rows);
    return;
  }
  parallel_for(n_ranges, [&](size_t i) {
    const uint32_t r0 = static_cast<uint32_t>(i) * per_range;
    fn(r0, std::min(rows, r0 + per_range));
  });
}

HEARTH_SIMD_CLONES
void add_rows(row_view<float> x, row_view<const float> y, uint32_t n, uint32_t r0, uint32_t r1) {
  for (uint32_t r = r0; r < r1; ++r) {
    float* xr = x.row(r);
    const float* yr = y.row(r);
    for (uint32_t i = 0; i < n; ++i) xr[i] += yr[i];
  }
}

//! Rows [r0, r1) of sequence s into their slots. A prefill chunk's rows spread over the threads
//! and convert in vectors: one thread converting them one element at a time kept the other
//! waiting for 3-4 % of `small`'s prefill.
HEARTH_SIMD_CLONES
void store_kv_rows(kv_pool& pool, uint32_t layer, row_view<const float> k, row_view<const float> v,
                   const seq_rows& s, uint32_t r0, uint32_t r1) {
  const kv_layout& lay = pool.layout();
  const uint32_t hd = lay.head_dim;
  for (uint32_t i = r0; i < r1; ++i) {
    const uint32_t pos = s.start_pos + i;
    assert(pos / lay.block_size < s.blocks.size() && "store_kv: block table too short");
    const uint32_t block = s.blocks[pos / lay.block_size];
    const size_t slot = pos % lay.block_size;
    for (uint32_t kv = 0; kv < 2; ++kv) {
      const float* src_row = (kv == 0 ? k : v).row(s.first_row + i);
      for (uint32_t h = 0; h < lay.n_head_kv; ++h) {
        const float* src = src_row + size_t{h} * hd;
        std::byte* dst = pool.tile(block, layer, kv, h) + slot * hd * lay.elem_bytes();
        if (lay.dtype == kv_dtype::f32) {
          std::memcpy(dst, src, size_t{hd} * 4);
          continue;
        }
        auto* out = reinterpret_cast<uint16_t*>(dst);
        for (uint32_t d = 0; d < hd; ++d) out[d] = simd::f32_to_bf16(src[d]);
      }
    }
  }
}

HEARTH_SIMD_CLONES
void rmsnorm_rows(row_view<const float> x, const float* weight, uint32_t n, float eps, row_view<float> out,
                  uint32_t r0, uint32_t r1) {
  for (uint32_t r = r0; r < r1; ++r) {
    const float* xr = x.row(r);
    float* yr = out.row(r);
    const float scale = 1.0f / std::sqrt(simd::dot(xr, xr, n) / static_cast<float>(n) + eps);
    for (uint32_t i = 0; i < n; ++i) yr[i] = xr[i] * scale * weight[i];
  }
}

//! The gate's activation, for a float or a vec: silu, or gelu with the tanh approximation (ggml's
//! formula; its CPU backend reads it from an f16 table, within ~1e-3 of this). 0.5 g (1 + tanh u)
//! is g sigmoid(2u): written so, large negative g loses nothing to cancellation.
template <ffn_activation A, class T>
HEARTH_SIMD_INLINE T activate(T g) {
  if constexpr (A == ffn_activation::silu) {
    return g / (1.0f + simd::exp(-g));
  } else {
    constexpr float two_sqrt_2_over_pi = 2 * 0.79788456080286535587989211986876f;
    return g / (1.0f + simd::exp(-two_sqrt_2_over_pi * g * (1.0f + 0.044715f * g * g)));
  }
}

template <ffn_activation A>
HEARTH_SIMD_INLINE void gated_rows(row_view<const float> gate_up, row_view<float> out, uint32_t n_ff,
                                   uint32_t r0, uint32_t r1) {
  for (uint32_t r = r0; r < r1; ++r) {
    const float* gate = gate_up.row(r);
    const float* up = gate + n_ff;
    float* y = out.row(r);
    uint32_t i = 0;
    for (; i + simd::lanes <= n_ff; i += simd::lanes) {  // GCC leaves the plain loop scalar
      simd::store(y + i, activate<A>(simd::load(gate + i)) * simd::load(up + i));
    }
    for (; i < n_ff; ++i) y[i] = activate<A>(gate[i]) * up[i];
  }
}

HEARTH_SIMD_CLONES
void gated_rows_of(ffn_activation act, row_view<const float> gate_up, row_view<float> out, uint32_t n_ff,
                   uint32_t r0, uint32_t r1) {
  if (act == ffn_activation::silu)
    gated_rows<ffn_activation::silu>(gate_up, out, n_ff, r0, r1);
  else
    gated_rows<ffn_activation::gelu>(gate_up, out, n_ff, r0, r1);
}

HEARTH_SIMD_CLONES
void softcap_range(float* x, size_t n, float cap) {
  simd::softcap(x, n, cap);
}

HEARTH_SIMD_CLONES
void rope_rows(row_view<float> x, uint32_t n_heads, uint32_t head_dim, const rope_table& t, uint32_t r0,
               uint32_t r1) {
  const uint32_t half = t.n_rot / 2;
  for (uint32_t r = r0; r < r1; ++r) {
    const float* __restrict c = t.cos.data() + size_t{r} * half;
    const float* __restrict s = t.sin.data() + size_t{r} * half;
    for (uint32_t h = 0; h < n_heads; ++h) {
      float* __restrict head = x.row(r) + size_t{h} * head_dim;
      if (t.pairing == rope_pairing::adjacent) {  // pairs (2i, 2i + 1)
        for (uint32_t i = 0; i < half; ++i) {
          const float x0 = head[2 * i], x1 = head[2 * i + 1];
          head[2 * i] = x0 * c[i] - x1 * s[i];
          head[2 * i + 1] = x0 * s[i] + x1 * c[i];
        }
      } else {  // pairs (i, i + half)
        for (uint32_t i = 0; i < half; ++i) {
          const float x0 = head[i], x1 = head[i + half];
          head[i] = x0 * c[i] - x1 * s[i];
          head[i + half] = x0 * s[i] + x1 * c[i];
        }
      }
    }
  }
}

}  // namespace

void rmsnorm(row_view<const float> x, std::span<const float> weight, float eps, row_view<float> out,
             uint32_t rows) {
  const uint32_t n = static_cast<uint32_t>(weight.size());
  assert(n > 0 && "rmsnorm: empty rows");
  for_row_ranges(rows, n,
                 [&](uint32_t r0, uint32_t r1) { rmsnorm_rows(x, weight.data(), n, eps, out, r0, r1); });
}

void gated_act(row_view<const float> gate_up, row_view<float> out, uint32_t rows, uint32_t n_ff,
               ffn_activation act) {
  for_row_ranges(rows, size_t{n_ff} * 3,
                 [&](uint32_t r0, uint32_t r1) { gated_rows_of(act, gate_up, out, n_ff, r0, r1); });
}

void softcap(std::span<float> x, float cap) {
  assert(cap > 0.0f && "softcap: the cap must be positive");
  softcap_range(x.data(), x.size(), cap);
}

rope_table make_rope_table(std::span<const uint32_t> positions, uint32_t n_rot, float base,
                           rope_pairing pairing, std::span<const float> freq_factors, float attn_factor) {
  assert(n_rot % 2 == 0 && "rope: n_rot must be even");
  assert((freq_factors.empty() || freq_factors.size() == n_rot / 2) && "rope: one factor per pair");
  const uint32_t half = n_rot / 2;
  std::vector<double> freq(half);  // radians per position of each pair
  for (uint32_t i = 0; i < half; ++i) freq[i] = ref::rope_freq(i, n_rot, base, freq_factors);
  rope_table t{n_rot, pairing, std::vector<float>(positions.size() * half),
               std::vector<float>(positions.size() * half)};
  for (size_t r = 0; r < positions.size(); ++r) {
    // A batch often repeats a position (decode steps of sequences of one length): reuse the row.
    if (r > 0 && positions[r] == positions[r - 1]) {
      std::copy_n(t.cos.begin() + static_cast<ptrdiff_t>((r - 1) * half), half,
                  t.cos.begin() + static_cast<ptrdiff_t>(r * half));
      std::copy_n(t.sin.begin() + static_cast<ptrdiff_t>((r - 1) * half), half,
                  t.sin.begin() + static_cast<ptrdiff_t>(r * half));
      continue;
    }
    for (uint32_t i = 0; i < half; ++i) {
      const double theta = positions[r] * freq[i];
      t.cos[r * half + i] = static_cast<float>(std::cos(theta) * attn_factor);
      t.sin[r * half + i] = static_cast<float>(std::sin(theta) * attn_factor);
    }
  }
  return t;
}

void rope(row_view<float> x, uint32_t rows, uint32_t n_heads, uint32_t head_dim, const rope_table& t) {
  assert(t.n_rot <= head_dim && "rope: n_rot > head_dim");
  assert(t.cos.size() >= size_t{rows} * (t.n_rot / 2) && "rope: table has fewer rows than x");
  for_row_ranges(rows, size_t{n_heads} * head_dim,
                 [&](uint32_t r0, uint32_t r1) { rope_rows(x, n_heads, head_dim, t, r0, r1); });
}

void add(row_view<float> x, row_view<const float> y, uint32_t rows, uint32_t n) {
  for_row_ranges(rows, n, [&](uint32_t r0, uint32_t r1) { add_rows(x, y, n, r0, r1); });
}

void store_kv(kv_pool& pool, uint32_t layer, row_view<const float> k, row_view<const float> v,
              std::span<const seq_rows> seqs) {
  const size_t row_floats = size_t{2} * pool.layout().n_head_kv * pool.layout().head_dim;
  for (const seq_rows& s : seqs) {
    for_row_ranges(s.n_rows, row_floats,
                   [&](uint32_t r0, uint32_t r1) { store_kv_rows(pool, layer, k, v, s, r0, r1); });
  }
}

}  // namespace hearth::ops
