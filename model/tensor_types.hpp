#pragma once
// Tensor element types as ggml numbers them, their block layouts, and conversion to and from f32.
//   f32, f16, bf16: one element per block.
//   q8_0: blocks of 32 = f16 scale d + 32 × int8 q;          x = d * q            (34 bytes)
//   q4_0: blocks of 32 = f16 scale d + 16 bytes of nibbles;  x = d * (nibble - 8) (18 bytes)
//         byte j holds element j (low nibble) and element j + 16 (high nibble).
// Every conversion has a plain loop here; kernels/ owns the fast paths.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace hearth {

enum class tensor_type : uint32_t { f32 = 0, f16 = 1, q4_0 = 2, q8_0 = 8, bf16 = 30 };

struct tensor_type_traits {
  const char* name;     //!< "f32", "f16", "q4_0", "q8_0", "bf16"
  uint32_t block_size;  //!< elements per block
  uint32_t block_bytes; //!< bytes per block
};

//! Traits of a known type; nullopt for a number ggml uses that Hearth does not read.
std::optional<tensor_type_traits> traits_of(uint32_t type);
const tensor_type_traits& traits_of(tensor_type type);
//! Parses "f32", "bf16", ... (as in --dtype).
std::optional<tensor_type> tensor_type_from_name(std::string_view name);

//! Bytes for n elements, or nullopt when n is not a multiple of the block size or overflows.
std::optional<uint64_t> bytes_for(tensor_type type, uint64_t n);

//! IEEE half / bfloat16 <-> float. fp32 -> half/bf16 round to nearest even; NaN stays NaN.
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t b);
uint16_t fp32_to_bf16(float f);

//! src holds bytes_for(type, dst.size()) bytes; writes dst.size() floats.
void dequantize(tensor_type type, std::span<const std::byte> src, std::span<float> dst);
//! dst holds bytes_for(type, src.size()) bytes. q8_0 / q4_0 choose d as ggml does (amax / 127,
//! and max-magnitude / -8 respectively).
void quantize(tensor_type type, std::span<const float> src, std::span<std::byte> dst);

}  // namespace hearth
