#include "model/tensor_types.hpp"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string>

#include "common/checked.hpp"
#include "model/quant_blocks.hpp"

namespace hearth {
namespace {

// One block of a quantized type to floats and back (model/quant_blocks.hpp); null for the
// one-element types, which convert in loops of their own.
using dequantize_fn = void (*)(const std::byte*, float*);
using quantize_fn = void (*)(const float*, std::byte*);

struct type_entry {
  tensor_type type;
  tensor_type_traits traits;
  dequantize_fn dequantize_block;
  quantize_fn quantize_block;
};

// ggml/src/ggml.c type_traits (type_name, blck_size, type_size), for the types Hearth reads.
namespace q = quant;
constexpr uint32_t qk = q::qk, qk_k = q::qk_k;
// clang-format off
constexpr type_entry entries[] = {
    {tensor_type::f32,    {"f32", 1, 4},                          nullptr,              nullptr},
    {tensor_type::f16,    {"f16", 1, 2},                          nullptr,              nullptr},
    {tensor_type::q4_0,   {"q4_0", qk, sizeof(q::block_q4_0)},    q::dequantize_q4_0,   q::quantize_q4_0},
    {tensor_type::q4_1,   {"q4_1", qk, sizeof(q::block_q4_1)},    q::dequantize_q4_1,   q::quantize_q4_1},
    {tensor_type::q5_0,   {"q5_0", qk, sizeof(q::block_q5_0)},    q::dequantize_q5_0,   q::quantize_q5_0},
    {tensor_type::q5_1,   {"q5_1", qk, sizeof(q::block_q5_1)},    q::dequantize_q5_1,   q::quantize_q5_1},
    {tensor_type::q8_0,   {"q8_0", qk, sizeof(q::block_q8_0)},    q::dequantize_q8_0,   q::quantize_q8_0},
    {tensor_type::q2_k,   {"q2_K", qk_k, sizeof(q::block_q2_K)},  q::dequantize_q2_k,   q::quantize_q2_k},
    {tensor_type::q3_k,   {"q3_K", qk_k, sizeof(q::block_q3_K)},  q::dequantize_q3_k,   q::quantize_q3_k},
    {tensor_type::q4_k,   {"q4_K", qk_k, sizeof(q::block_q4_K)},  q::dequantize_q4_k,   q::quantize_q4_k},
    {tensor_type::q5_k,   {"q5_K", qk_k, sizeof(q::block_q5_K)},  q::dequantize_q5_k,   q::quantize_q5_k},
    {tensor_type::q6_k,   {"q6_K", qk_k, sizeof(q::block_q6_K)},  q::dequantize_q6_k,   q::quantize_q6_k},
    {tensor_type::q8_k,   {"q8_K", qk_k, sizeof(q::block_q8_K)},  q::dequantize_q8_k,   q::quantize_q8_k},
    {tensor_type::iq4_nl, {"iq4_nl", qk, sizeof(q::block_iq4_nl)},q::dequantize_iq4_nl, q::quantize_iq4_nl},
    {tensor_type::bf16,   {"bf16", 1, 2},                         nullptr,              nullptr},
};
// clang-format on

constexpr tensor_type all_types[] = {
    tensor_type::f32,  tensor_type::f16,  tensor_type::q4_0, tensor_type::q4_1,   tensor_type::q5_0,
    tensor_type::q5_1, tensor_type::q8_0, tensor_type::q2_k, tensor_type::q3_k,   tensor_type::q4_k,
    tensor_type::q5_k, tensor_type::q6_k, tensor_type::q8_k, tensor_type::iq4_nl, tensor_type::bf16,
};
static_assert(std::size(all_types) == std::size(entries));

// ggml.h enum ggml_type, every number it names (llama.cpp commit c392e509): 4 and 5 (q4_2,
// q4_3), 31-33 (q4_0_4_4 ...) and 36-38 (iq4_nl_4_4 ...) were removed from files and stay unnamed.
constexpr const char* ggml_names[] = {
    "f32",     "f16",   "q4_0",   "q4_1",  nullptr, nullptr,  "q5_0",  "q5_1",    "q8_0",
    "q8_1",    "q2_K",  "q3_K",   "q4_K",  "q5_K",  "q6_K",   "q8_K",  "iq2_xxs", "iq2_xs",
    "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "i8",    "i16",     "i32",
    "i64",     "f64",   "iq1_m",  "bf16",  nullptr, nullptr,  nullptr, "tq1_0",   "tq2_0",
};

const type_entry* find_entry(uint32_t type) {
  for (const auto& e : entries) {
    if (static_cast<uint32_t>(e.type) == type) return &e;
  }
  return nullptr;
}

const type_entry& entry_of(tensor_type type) {
  const type_entry* e = find_entry(static_cast<uint32_t>(type));
  assert(e != nullptr && "tensor_type outside the enum");
  return e != nullptr ? *e : entries[0];
}

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

void store_u16(std::byte* p, uint16_t v) {
  std::memcpy(p, &v, 2);
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::span<const tensor_type> tensor_types() {
  return all_types;
}

std::optional<tensor_type_traits> traits_of(uint32_t type) {
  const type_entry* e = find_entry(type);
  if (e == nullptr) return std::nullopt;
  return e->traits;
}

const tensor_type_traits& traits_of(tensor_type type) {
  return entry_of(type).traits;
}

std::optional<tensor_type> tensor_type_from_name(std::string_view name) {
  for (const auto& e : entries) {
    if (equal_ignoring_case(name, e.traits.name)) return e.type;
  }
  return std::nullopt;
}

const char* ggml_type_name(uint32_t type) {
  return type < std::size(ggml_names) ? ggml_names[type] : nullptr;
}

std::string_view readable_types() {
  static const std::string line = [] {
    std::string s;
    for (const auto& e : entries) s += (s.empty() ? "" : ", ") + std::string(e.traits.name);
    return s;
  }();
  return line;
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
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: scale to units of 2^-24 and round to nearest even.
    const float a = float_of(abs);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f)));
  }
  // Normal: re-bias the exponent, round the 13 dropped mantissa bits to nearest even.
  const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

float bf16_to_fp32(uint16_t b) {
  return float_of(uint32_t{b} << 16);
}

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
    default: {
      const type_entry& e = entry_of(type);
      const size_t n = e.traits.block_size, bytes = e.traits.block_bytes;
      for (size_t b = 0; b < dst.size() / n; ++b) e.dequantize_block(p + b * bytes, dst.data() + b * n);
      return;
    }
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
    default: {
      const type_entry& e = entry_of(type);
      const size_t n = e.traits.block_size, bytes = e.traits.block_bytes;
      for (size_t b = 0; b < src.size() / n; ++b) e.quantize_block(src.data() + b * n, p + b * bytes);
      return;
    }
  }
}

}  // namespace hearth
