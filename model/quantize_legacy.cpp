// Quantizers of the 32-element block types, as llama-quantize runs them without an importance
// matrix: the reference algorithms of llama.cpp's ggml/src/ggml-quants.c (commit c392e509),
// quantize_row_{q4_0,q4_1,q5_0,q5_1,q8_0}_ref and quantize_iq4_nl (its impl with ntry = 7).
// Rewritten here from their description; same choices of d, m and rounding, so the files
// Hearth writes are the files llama.cpp would write from the same floats.
#include <algorithm>
#include <cmath>

#include "model/quant_blocks.hpp"
#include "model/tensor_types.hpp"

namespace hearth::quant {
namespace {

void min_max(const float* x, uint32_t n, float& min, float& max) {
  min = x[0];
  max = x[0];
  for (uint32_t i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
  }
}

// v truncated toward zero and clamped to [0, top], as ggml's (int8_t)(v) and MIN do: the callers
// add 0.5 (or 8.5, 16.5) first, so this rounds half up. Written to keep the float expression
// ggml evaluates (x * id + 8.5f, not (x * id + 8) + 0.5), so the bits match its files. NaN -> 0.
uint8_t truncate_clamped(float v, int top) {
  if (!(v >= 0.0f)) return 0;
  return static_cast<uint8_t>(std::min(v, static_cast<float>(top)));
}

// Puts element j's 5th bit (bit 4 of q[j]) at bit j of qh.
void pack_q5_high_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t h = 0;
  for (uint32_t j = 0; j < qk; ++j) h |= uint32_t{(q[j] >> 4) & 1u} << j;
  for (uint32_t k = 0; k < 4; ++k) qh[k] = static_cast<uint8_t>(h >> (8 * k));
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (uint32_t j = 0; j < qk / 2; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 0xf) | ((q[j + qk / 2] & 0xf) << 4));
}

// Symmetric levels (q4_0, q5_0): d = max / -half for the element of largest magnitude (so that it
// maps to q = 0 exactly and the last level, half - 1, is on the other side), q = x / d + half.
float symmetric_levels(const float* x, uint32_t half, uint8_t* q) {
  const float d = signed_absmax(x, qk) / -static_cast<float>(half);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (uint32_t j = 0; j < qk; ++j)
    q[j] = truncate_clamped(x[j] * id + static_cast<float>(half) + 0.5f, static_cast<int>(2 * half - 1));
  return d;
}

// Ranged levels (q4_1, q5_1): the block's range [min, max] in `steps` steps, q = (x - min) / d.
float ranged_levels(const float* x, uint32_t steps, uint8_t* q, float& min) {
  float max = 0;
  min = 0;
  min_max(x, qk, min, max);
  const float d = (max - min) / static_cast<float>(steps);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (uint32_t j = 0; j < qk; ++j)
    q[j] = truncate_clamped((x[j] - min) * id + 0.5f, static_cast<int>(steps));
  return d;
}

// One block of q4_0 / q5_0 (symmetric levels, `levels` the half range 8 / 16) or q4_1 / q5_1
// (ranged: the block has a min m, `levels` its steps 15 / 31); the q5 types' 5th bits go to qh.
template <class Block>
void quantize_block(const float* x, uint32_t levels, std::byte* out) {
  Block b{};
  uint8_t q[qk];
  if constexpr (requires { b.m; }) {
    float min = 0;
    b.d = fp32_to_fp16(ranged_levels(x, levels, q, min));
    b.m = fp32_to_fp16(min);
  } else {
    b.d = fp32_to_fp16(symmetric_levels(x, levels, q));
  }
  pack_nibbles(q, b.qs);
  if constexpr (requires { b.qh; }) pack_q5_high_bits(q, b.qh);
  store_block(b, out);
}

}  // namespace

void quantize_q4_0(const float* x, std::byte* out) {
  quantize_block<block_q4_0>(x, 8, out);
}

void quantize_q4_1(const float* x, std::byte* out) {
  quantize_block<block_q4_1>(x, 15, out);
}

void quantize_q5_0(const float* x, std::byte* out) {
  quantize_block<block_q5_0>(x, 16, out);
}

void quantize_q5_1(const float* x, std::byte* out) {
  quantize_block<block_q5_1>(x, 31, out);
}

// q8_0: d = amax / 127, q = round(x / d) (half away from zero, as roundf).
void quantize_q8_0(const float* x, std::byte* out) {
  block_q8_0 b{};
  float amax = 0.0f;
  for (uint32_t j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  b.d = fp32_to_fp16(d);
  for (uint32_t j = 0; j < qk; ++j) {
    const float v = std::round(x[j] * id);  // in [-127, 127]; NaN (from a NaN input) -> 0
    b.qs[j] = v == v ? static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f)) : int8_t{0};
  }
  store_block(b, out);
}

namespace {

// The index of the level of kvalues_iq4nl nearest to v (the upper one on ties, as ggml's
// best_index_int8).
int nearest_iq4nl(float v) {
  const auto& k = kvalues_iq4nl;
  if (!(v > k[0])) return 0;  // NaN too
  if (v >= k[15]) return 15;
  int lo = 0, hi = 15;  // k[lo] <= v < k[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (v < k[mid] ? hi : lo) = mid;
  }
  return v - static_cast<float>(k[lo]) < static_cast<float>(k[hi]) - v ? lo : hi;
}

// For the levels nearest to id * x: the sums sum(w q x) and sum(w q^2), weights w = x^2 (large
// elements are kept best), whose ratio is the least-squares scale of that assignment.
struct fit_sums {
  float qx = 0.0f;
  float q2 = 0.0f;
};

fit_sums fit_iq4nl(const float* x, float id, uint8_t* levels) {
  fit_sums s;
  for (uint32_t j = 0; j < qk; ++j) {
    const int l = nearest_iq4nl(id * x[j]);
    if (levels != nullptr) levels[j] = static_cast<uint8_t>(l);
    const auto v = static_cast<float>(kvalues_iq4nl[l]);
    const float w = x[j] * x[j];
    s.qx += w * v * x[j];
    s.q2 += w * v * v;
  }
  return s;
}

}  // namespace

// iq4_nl: x ~ d * kvalues_iq4nl[q]. Starting from 1/d = 127 / max (max: the element of largest
// magnitude, with its sign), 15 trial scales 1/d = (t - 127) / max, t in [-7, 7], map max near
// the extreme level -127; the least-squares d of the trial that cuts the weighted squared error
// most (sum(w q x)^2 / sum(w q^2) largest) wins, and q is then the level nearest to x / d.
void quantize_iq4_nl(const float* x, std::byte* out) {
  block_iq4_nl b{};
  const float max = signed_absmax(x, qk);
  float d = 0.0f;
  if (std::fabs(max) >= 1e-15f) {  // GROUP_MAX_EPS: an all-zero block keeps d = 0
    const auto first = fit_iq4nl(x, -static_cast<float>(kvalues_iq4nl[0]) / max, nullptr);
    d = first.q2 > 0.0f ? first.qx / first.q2 : 0.0f;
    float best = d * first.qx;
    for (int t = -7; t <= 7; ++t) {
      const auto s = fit_iq4nl(x, (static_cast<float>(t) + kvalues_iq4nl[0]) / max, nullptr);
      if (s.q2 > 0.0f && s.qx * s.qx > best * s.q2) {
        d = s.qx / s.q2;
        best = d * s.qx;
      }
    }
  }
  uint8_t q[qk];
  fit_iq4nl(x, d != 0.0f ? 1.0f / d : 0.0f, q);  // for d = 0, level 8 (value 1) as in ggml
  b.d = fp32_to_fp16(d);
  pack_nibbles(q, b.qs);
  store_block(b, out);
}

}  // namespace hearth::quant
