// Quantizers of the K types (super-blocks of 256), as llama-quantize runs them without an
// importance matrix: the reference algorithms of llama.cpp's ggml/src/ggml-quants.c (commit
// c392e509) quantize_row_{q2_K,q3_K,q4_K,q5_K,q6_K,q8_K}_ref and their helpers make_qkx2_quants,
// make_q3_quants and make_qx_quants, rewritten here from their description with the same
// choices (search ranges, weights, rounding, order of float operations), so that Hearth's
// files carry the quantization llama.cpp's own tool would give the same floats.
//
// Every K type has the same two steps:
//  1. per sub-block (16 or 32 elements) a float scale (and for q2/q4/q5_K a min) from a search
//     that minimises a weighted error;
//  2. those scales quantized against the super-block's largest one (6 or 4 bits, or int8 for
//     q6_K), and each element re-quantized against the scale that was actually stored.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "model/quant_blocks.hpp"
#include "model/tensor_types.hpp"

namespace hearth::quant {
namespace {

constexpr float group_max_eps = 1e-15f;  // GROUP_MAX_EPS: below it a sub-block is all zero

// v rounded to the nearest integer, ties to even (ggml's nearest_int, as lrint rounds), clamped
// to [lo, hi]; NaN gives lo. Clamped as a float first (the same result, rounding is monotonic),
// so that adding 1.5 * 2^23 leaves the integer exactly in the low mantissa bits: no call to
// libm's lrintf per element (neither compiler inlines it with errno on), and no std::clamp,
// whose out-of-line -O0 copy from another object is the one a sanitizer build links.
int level(float v, int lo, int hi) {
  const float low = static_cast<float>(lo), high = static_cast<float>(hi);
  v = v >= low ? v : low;
  v = v <= high ? v : high;
  const float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// Stored f16 back to float: re-quantization uses the scales as a reader will see them.
float half(uint16_t h) {
  return fp16_to_fp32(h);
}

// Asymmetric scale and min: x ~ scale * L - min, L in [0, nmax], min >= 0 (make_qkx2_quants).
// Weighted by w; the error is |diff| (use_mad) or diff^2. It starts from the range [min(x, 0),
// max(x)] split in nmax steps, then tries 1/scale = (nmax + rmin + rdelta * is) / range for
// is = 0..nstep, each with the weighted least-squares scale and min of its assignment, and keeps
// the one of least error. Writes L; returns the scale, `min` the (positive) min.
float search_scale_min(const float* x, const float* w, uint32_t n, int nmax, float rmin, float rdelta,
                       int nstep, bool use_mad, uint8_t* L, float& the_min) {
  float min = x[0], max = x[0];
  float sum_w = w[0], sum_x = sum_w * x[0];
  for (uint32_t i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    the_min = -min;
    return 0.0f;
  }
  const auto error_of = [&](const uint8_t* levels, float scale, float offset) {
    float e = 0.0f;
    for (uint32_t i = 0; i < n; ++i) {
      const float diff = scale * static_cast<float>(levels[i]) + offset - x[i];
      e += w[i] * (use_mad ? std::fabs(diff) : diff * diff);
    }
    return e;
  };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  for (uint32_t i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(level(iscale * (x[i] - min), 0, nmax));
  float best = error_of(L, scale, min);
  if (nstep < 1) {
    the_min = -min;
    return scale;
  }
  uint8_t aux[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const int l = level(iscale * (x[i] - min), 0, nmax);
      aux[i] = static_cast<uint8_t>(l);
      const auto fl = static_cast<float>(l);
      sum_l += w[i] * fl;
      sum_l2 += w[i] * fl * fl;
      sum_xl += w[i] * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D <= 0) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) {  // the min may only lower values: refit the scale alone
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float e = error_of(aux, this_scale, this_min);
    if (e < best) {
      std::copy(aux, aux + n, L);
      best = e;
      scale = this_scale;
      min = this_min;
    }
  }
  the_min = -min;
  return scale;
}

// Symmetric scale for q3_K (make_q3_quants with rmse): x ~ scale * l, l in [-nmax, nmax - 1],
// weights x^2. Starts from l = round(-nmax * x / max), then moves single elements to the level
// their residual asks for while that raises sum(w l x)^2 / sum(w l^2) (the weighted error's
// reduction), up to 5 passes. Writes L = l + nmax; returns the least-squares scale.
float search_scale_q3(const float* x, uint32_t n, int nmax, int8_t* L) {
  const float max = signed_absmax(x, n);
  if (std::fabs(max) < group_max_eps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  const float iscale = -static_cast<float>(nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const int l = level(iscale * x[i], -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int n_changed = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const auto li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx <= 0) continue;
      float sl2 = suml2 - w * li * li;
      const int new_l = level(x[i] * sl2 / slx, -nmax, nmax - 1);
      if (new_l == L[i]) continue;
      const auto fl = static_cast<float>(new_l);
      slx += w * x[i] * fl;
      sl2 += w * fl * fl;
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<int8_t>(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++n_changed;
      }
    }
    if (n_changed == 0) break;
  }
  for (uint32_t i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return sumlx / suml2;
}

// Symmetric scale for q6_K (make_qx_quants, rmse_type 1, no importance weights): x ~ scale * l,
// l in [-nmax, nmax - 1], weights x^2; tries 1/scale = -(nmax + 0.1 is) / max for is in
// [-9, 9] and keeps the assignment whose least-squares scale reduces the error most.
float search_scale_q6(const float* x, uint32_t n, int nmax, int8_t* L) {
  const float max = signed_absmax(x, n);
  if (std::fabs(max) < group_max_eps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  // sum(w x l) and sum(w l^2) for the levels 1/scale = iscale gives; writes them to L if asked.
  const auto sums = [&](float iscale, int8_t* levels, float& sumlx, float& suml2) {
    sumlx = suml2 = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const int l = level(iscale * x[i], -nmax, nmax - 1);
      if (levels != nullptr) levels[i] = static_cast<int8_t>(l + nmax);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
  };
  float sumlx = 0, suml2 = 0;
  sums(-static_cast<float>(nmax) / max, L, sumlx, suml2);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sums(iscale, nullptr, sumlx, suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      sums(iscale, L, sumlx, suml2);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// 256 2-bit values into 64 bytes: byte 32 * (e / 128) + e % 32 holds element e at bit
// 2 * ((e / 32) % 4), the layout of q2_K's and q3_K's qs.
void pack_2bit_planes(const uint8_t* L, uint8_t* qs) {
  for (uint32_t j = 0; j < qk_k; j += 128) {
    for (uint32_t l = 0; l < 32; ++l) {
      qs[j / 4 + l] =
          static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
  }
}

// 256 4-bit values into 128 bytes: byte 32 * (e / 64) + e % 32, low nibble for the first 32 of
// each 64 elements (q4_K's and q5_K's qs).
void pack_nibble_pairs(const uint8_t* L, uint8_t* qs) {
  for (uint32_t j = 0; j < qk_k; j += 64) {
    for (uint32_t l = 0; l < 32; ++l)
      qs[j / 2 + l] = static_cast<uint8_t>((L[j + l] & 0xf) | ((L[j + l + 32] & 0xf) << 4));
  }
}

// A 6-bit code of v against the super-block's largest value: round(v * 63 / max), in [0, 63].
uint8_t code6(float v, float inv) {
  return static_cast<uint8_t>(level(inv * v, 0, 63));
}

// Steps 1 and 2 shared by q4_K and q5_K: 8 sub-blocks of 32 with scale and min each, weights
// sqrt(mean x^2) + |x| (the larger elements count more, none counts nothing). Sets d, dmin and
// scales of the block, and L in [0, nmax].
template <class Block>
void scales_mins_k4(const float* x, int nmax, float rmin, int nstep, Block& b, uint8_t* L) {
  float scales[8], mins[8], max_scale = 0, max_min = 0;
  for (uint32_t j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (uint32_t l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    float w[32];
    for (uint32_t l = 0; l < 32; ++l) w[l] = av_x + std::fabs(xs[l]);
    scales[j] = search_scale_min(xs, w, 32, nmax, rmin, 0.1f, nstep, false, L + 32 * j, mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t sc[8], m[8];
  for (uint32_t j = 0; j < 8; ++j) {
    sc[j] = code6(scales[j], inv_scale);
    m[j] = code6(mins[j], inv_min);
  }
  set_scales_mins_k4(sc, m, b.scales);
  b.d = fp32_to_fp16(max_scale / 63.f);
  b.dmin = fp32_to_fp16(max_min / 63.f);
  for (uint32_t j = 0; j < 8; ++j) {
    const float d = half(b.d) * static_cast<float>(sc[j]);
    if (d == 0) continue;  // a zero scale: the search's levels stay (they decode to -min anyway)
    const float dm = half(b.dmin) * static_cast<float>(m[j]);
    for (uint32_t l = 0; l < 32; ++l) {
      L[32 * j + l] = static_cast<uint8_t>(level((x[32 * j + l] + dm) / d, 0, nmax));
    }
  }
}

}  // namespace

// q2_K: 16 sub-blocks of 16, x ~ d sc q - dmin m with q in [0, 3]; scale and min per sub-block
// from a search weighted by |x| on absolute error, each coded in 4 bits against the largest.
void quantize_q2_k(const float* x, std::byte* out) {
  block_q2_K b{};
  uint8_t L[qk_k];
  float scales[16], mins[16], max_scale = 0, max_min = 0;
  for (uint32_t j = 0; j < 16; ++j) {
    float w[16];
    for (uint32_t l = 0; l < 16; ++l) w[l] = std::fabs(x[16 * j + l]);
    scales[j] = search_scale_min(x + 16 * j, w, 16, 3, -0.5f, 0.1f, 15, true, L + 16 * j, mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const auto code4 = [](float v, float inv) { return static_cast<uint8_t>(level(inv * v, 0, 15)); };
  if (max_scale > 0) {
    for (uint32_t j = 0; j < 16; ++j) b.scales[j] = code4(scales[j], 15.f / max_scale);
    b.d = fp32_to_fp16(max_scale / 15.f);
  }
  if (max_min > 0) {
    for (uint32_t j = 0; j < 16; ++j)
      b.scales[j] = static_cast<uint8_t>(b.scales[j] | (code4(mins[j], 15.f / max_min) << 4));
    b.dmin = fp32_to_fp16(max_min / 15.f);
  }
  for (uint32_t j = 0; j < 16; ++j) {
    const float d = half(b.d) * static_cast<float>(b.scales[j] & 0xf);
    if (d == 0) continue;
    const float dm = half(b.dmin) * static_cast<float>(b.scales[j] >> 4);
    for (uint32_t l = 0; l < 16; ++l) {
      L[16 * j + l] = static_cast<uint8_t>(level((x[16 * j + l] + dm) / d, 0, 3));
    }
  }
  pack_2bit_planes(L, b.qs);
  store_block(b, out);
}

// q3_K: 16 sub-blocks of 16, x ~ d (sc - 32) (q - 4) with q in [0, 7]; the sub-block scales
// (signed) coded in 6 bits against the one of largest magnitude, d = max_scale / -32.
void quantize_q3_k(const float* x, std::byte* out) {
  block_q3_K b{};
  int8_t L[qk_k];
  float scales[16];
  for (uint32_t j = 0; j < 16; ++j) scales[j] = search_scale_q3(x + 16 * j, 16, 4, L + 16 * j);
  const float max_scale = signed_absmax(scales, 16);
  if (max_scale != 0) {
    const float iscale = -32.f / max_scale;
    uint8_t stored[16];
    for (uint32_t j = 0; j < 16; ++j)
      stored[j] = static_cast<uint8_t>(level(iscale * scales[j], -32, 31) + 32);
    set_q3_k_scales(stored, b.scales);
    b.d = fp32_to_fp16(1 / iscale);
  }
  for (uint32_t j = 0; j < 16; ++j) {
    const float d = half(b.d) * static_cast<float>(q3_k_scale(j, b.scales));
    if (d == 0) continue;
    for (uint32_t l = 0; l < 16; ++l)
      L[16 * j + l] = static_cast<int8_t>(level(x[16 * j + l] / d, -4, 3) + 4);
  }
  // The 3rd bit of element e to bit e / 32 of hmask[e % 32]; the low 2 bits as in q2_K.
  uint8_t low[qk_k];
  for (uint32_t e = 0; e < qk_k; ++e) {
    if (L[e] > 3) b.hmask[e % 32] = static_cast<uint8_t>(b.hmask[e % 32] | (1u << (e / 32)));
    low[e] = static_cast<uint8_t>(L[e] & 3);
  }
  pack_2bit_planes(low, b.qs);
  store_block(b, out);
}

// q4_K: 8 sub-blocks of 32, x ~ d sc q - dmin m with q in [0, 15] (search over 21 scales).
void quantize_q4_k(const float* x, std::byte* out) {
  block_q4_K b{};
  uint8_t L[qk_k];
  scales_mins_k4(x, 15, -1.f, 20, b, L);
  pack_nibble_pairs(L, b.qs);
  store_block(b, out);
}

// q5_K: as q4_K with q in [0, 31] (search over 16 scales); the 5th bit of element e is bit
// e / 32 of qh[e % 32].
void quantize_q5_k(const float* x, std::byte* out) {
  block_q5_K b{};
  uint8_t L[qk_k];
  scales_mins_k4(x, 31, -0.5f, 15, b, L);
  for (uint32_t e = 0; e < qk_k; ++e) {
    if (L[e] > 15) b.qh[e % 32] = static_cast<uint8_t>(b.qh[e % 32] | (1u << (e / 32)));
  }
  pack_nibble_pairs(L, b.qs);
  store_block(b, out);
}

// q6_K: 16 sub-blocks of 16, x ~ d sc (q - 32) with q in [0, 63] and sc int8, d = max_scale / -128.
void quantize_q6_k(const float* x, std::byte* out) {
  block_q6_K b{};
  int8_t L[qk_k];
  float scales[16];
  for (uint32_t j = 0; j < 16; ++j) scales[j] = search_scale_q6(x + 16 * j, 16, 32, L + 16 * j);
  const float max_scale = signed_absmax(scales, 16);
  if (std::fabs(max_scale) >= group_max_eps) {
    const float iscale = -128.f / max_scale;
    b.d = fp32_to_fp16(1 / iscale);
    for (uint32_t j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(level(iscale * scales[j], -128, 127));
    for (uint32_t j = 0; j < 16; ++j) {
      const float d = half(b.d) * static_cast<float>(b.scales[j]);
      if (d == 0) continue;
      for (uint32_t l = 0; l < 16; ++l)
        L[16 * j + l] = static_cast<int8_t>(level(x[16 * j + l] / d, -32, 31) + 32);
    }
    // Element e (half h, group g, lane l as in dequantize_q6_k): low 4 bits to ql, high 2 to qh.
    for (uint32_t e = 0; e < qk_k; ++e) {
      const uint32_t h = e / 128, g = (e % 128) / 32, l = e % 32;
      const auto q = static_cast<uint8_t>(L[e]);
      uint8_t& low = b.ql[64 * h + 32 * (g % 2) + l];
      low = static_cast<uint8_t>(low | ((q & 0xf) << (g < 2 ? 0 : 4)));
      b.qh[32 * h + l] = static_cast<uint8_t>(b.qh[32 * h + l] | ((q >> 4) << (2 * g)));
    }
  }
  store_block(b, out);
}

// q8_K: d = max / -127 for the element of largest magnitude, q = round(x / d), and the sums of
// each 16 q that dot products with q2_K ... q6_K use for their mins.
void quantize_q8_k(const float* x, std::byte* out) {
  block_q8_K b{};
  const float max = signed_absmax(x, qk_k);
  if (max != 0) {
    const float iscale = -127.f / max;
    for (uint32_t e = 0; e < qk_k; ++e) b.qs[e] = static_cast<int8_t>(level(iscale * x[e], -128, 127));
    for (uint32_t j = 0; j < 16; ++j) {
      int sum = 0;
      for (uint32_t l = 0; l < 16; ++l) sum += b.qs[16 * j + l];
      b.bsums[j] = static_cast<int16_t>(sum);
    }
    b.d = 1 / iscale;
  }
  store_block(b, out);
}

}  // namespace hearth::quant
