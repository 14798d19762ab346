#include "model/tensor_types.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "common/checked.hpp"

namespace hearth {
namespace {

constexpr uint32_t qk = 32;  // elements per q8_0 / q4_0 block
constexpr tensor_type_traits f32_traits{"f32", 1, 4};
constexpr tensor_type_traits f16_traits{"f16", 1, 2};
constexpr tensor_type_traits bf16_traits{"bf16", 1, 2};
constexpr tensor_type_traits q8_0_traits{"q8_0", qk, 2 + qk};
constexpr tensor_type_traits q4_0_traits{"q4_0", qk, 2 + qk / 2};

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t load_u16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

void store_u16(std::byte* p, uint16_t v) { std::memcpy(p, &v, 2); }

// q8_0: d = amax / 127, q = round(x / d).
void quantize_q8_0(const float* x, std::byte* out) {
  float amax = 0.0f;
  for (uint32_t i = 0; i < qk; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(out, fp32_to_fp16(d));
  for (uint32_t i = 0; i < qk; ++i) {
    out[2 + i] = static_cast<std::byte>(static_cast<int8_t>(std::lround(x[i] * id)));
  }
}

// q4_0: d = (value of largest magnitude) / -8, q = clamp(x / d + 8.5, 0, 15).
void quantize_q4_0(const float* x, std::byte* out) {
  float amax = 0.0f, max = 0.0f;
  for (uint32_t i = 0; i < qk; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(out, fp32_to_fp16(d));
  for (uint32_t j = 0; j < qk / 2; ++j) {
    const auto lo = static_cast<uint8_t>(std::min(15.0f, x[j] * id + 8.5f));
    const auto hi = static_cast<uint8_t>(std::min(15.0f, x[j + qk / 2] * id + 8.5f));
    out[2 + j] = static_cast<std::byte>(lo | (hi << 4));
  }
}

}  // namespace

std::optional<tensor_type_traits> traits_of(uint32_t type) {
  switch (type) {
    case 0: return f32_traits;
    case 1: return f16_traits;
    case 2: return q4_0_traits;
    case 8: return q8_0_traits;
    case 30: return bf16_traits;
    default: return std::nullopt;
  }
}

const tensor_type_traits& traits_of(tensor_type type) {
  switch (type) {
    case tensor_type::f32: return f32_traits;
    case tensor_type::f16: return f16_traits;
    case tensor_type::q4_0: return q4_0_traits;
    case tensor_type::q8_0: return q8_0_traits;
    case tensor_type::bf16: return bf16_traits;
  }
  assert(false && "tensor_type outside the enum");
  return f32_traits;
}

std::optional<tensor_type> tensor_type_from_name(std::string_view name) {
  for (auto t : {tensor_type::f32, tensor_type::f16, tensor_type::bf16, tensor_type::q8_0, tensor_type::q4_0}) {
    if (name == traits_of(t).name) return t;
  }
  return std::nullopt;
}

std::optional<uint64_t> bytes_for(tensor_type type, uint64_t n) {
  const auto& tr = traits_of(type);
  if (n % tr.block_size != 0) return std::nullopt;
  return checked_mul(n / tr.block_size, tr.block_bytes);
}

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return float_of(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return float_of(sign | ((exp + 112) << 23) | (mant << 13));
  // Subnormal half: mant * 2^-24, exact in float.
  const float v = std::ldexp(static_cast<float>(mant), -24);
  return sign ? -v : v;
}

uint16_t fp32_to_fp16(float f) {
  const uint32_t u = bits_of(f);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // rounds to inf
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: scale to units of 2^-24 and round to nearest even.
    const float a = float_of(abs);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f)));
  }
  // Normal: re-bias the exponent, round the 13 dropped mantissa bits to nearest even.
  const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

float bf16_to_fp32(uint16_t b) { return float_of(uint32_t{b} << 16); }

uint16_t fp32_to_bf16(float f) {
  const uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

void dequantize(tensor_type type, std::span<const std::byte> src, std::span<float> dst) {
  assert(bytes_for(type, dst.size()) == src.size() && "dequantize: size mismatch");
  const std::byte* p = src.data();
  switch (type) {
    case tensor_type::f32:
      std::memcpy(dst.data(), p, dst.size() * 4);
      return;
    case tensor_type::f16:
      for (size_t i = 0; i < dst.size(); ++i) dst[i] = fp16_to_fp32(load_u16(p + 2 * i));
      return;
    case tensor_type::bf16:
      for (size_t i = 0; i < dst.size(); ++i) dst[i] = bf16_to_fp32(load_u16(p + 2 * i));
      return;
    case tensor_type::q8_0:
      for (size_t b = 0; b < dst.size() / qk; ++b, p += q8_0_traits.block_bytes) {
        const float d = fp16_to_fp32(load_u16(p));
        for (uint32_t i = 0; i < qk; ++i) dst[b * qk + i] = d * static_cast<float>(static_cast<int8_t>(p[2 + i]));
      }
      return;
    case tensor_type::q4_0:
      for (size_t b = 0; b < dst.size() / qk; ++b, p += q4_0_traits.block_bytes) {
        const float d = fp16_to_fp32(load_u16(p));
        for (uint32_t j = 0; j < qk / 2; ++j) {
          const auto byte = static_cast<uint8_t>(p[2 + j]);
          dst[b * qk + j] = d * static_cast<float>((byte & 0x0f) - 8);
          dst[b * qk + j + qk / 2] = d * static_cast<float>((byte >> 4) - 8);
        }
      }
      return;
  }
}

void quantize(tensor_type type, std::span<const float> src, std::span<std::byte> dst) {
  assert(bytes_for(type, src.size()) == dst.size() && "quantize: size mismatch");
  std::byte* p = dst.data();
  switch (type) {
    case tensor_type::f32:
      std::memcpy(p, src.data(), src.size() * 4);
      return;
    case tensor_type::f16:
      for (size_t i = 0; i < src.size(); ++i) store_u16(p + 2 * i, fp32_to_fp16(src[i]));
      return;
    case tensor_type::bf16:
      for (size_t i = 0; i < src.size(); ++i) store_u16(p + 2 * i, fp32_to_bf16(src[i]));
      return;
    case tensor_type::q8_0:
      for (size_t b = 0; b < src.size() / qk; ++b) quantize_q8_0(&src[b * qk], p + b * q8_0_traits.block_bytes);
      return;
    case tensor_type::q4_0:
      for (size_t b = 0; b < src.size() / qk; ++b) quantize_q4_0(&src[b * qk], p + b * q4_0_traits.block_bytes);
      return;
  }
}

}  // namespace hearth
