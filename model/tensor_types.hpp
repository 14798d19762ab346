#pragma once
// Tensor element types as ggml numbers them (llama.cpp's ggml.h enum ggml_type), their block
// layouts, and conversion to and from f32.
//   f32, f16, bf16: one element per block.
//   q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl: blocks of 32 elements with an f16 scale (and min).
//   q2_K q3_K q4_K q5_K q6_K: super-blocks of 256 with quantized sub-block scales.
//   q8_K: super-blocks of 256 of int8 with a float scale (the activations of K-quant dot products).
// The exact byte layouts, each from ggml's ggml-common.h, are in model/quant_blocks.hpp. Every
// conversion has a plain loop in model/; kernels/ owns the fast paths.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace hearth {

//! The types Hearth reads and writes, by their ggml numbers.
enum class tensor_type : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq4_nl = 20,
  bf16 = 30,
};

struct tensor_type_traits {
  const char* name;      //!< ggml's name: "f32", "q4_0", "q4_K", "iq4_nl", ...
  uint32_t block_size;   //!< elements per block
  uint32_t block_bytes;  //!< bytes per block
};

//! Every type Hearth reads, in ggml's order.
std::span<const tensor_type> tensor_types();
//! Traits of a type Hearth reads; nullopt for any other number (see ggml_type_name).
std::optional<tensor_type_traits> traits_of(uint32_t type);
const tensor_type_traits& traits_of(tensor_type type);
//! Parses a type's ggml name, in any case ("q4_K" or "q4_k").
std::optional<tensor_type> tensor_type_from_name(std::string_view name);
//! ggml's name for any number of its enum ggml_type, read or not ("iq2_xxs", "tq1_0", "i32");
//! nullptr for a number ggml has never used or has removed (4, 5, 31-33, 36-38, >= 39).
const char* ggml_type_name(uint32_t type);
//! The types Hearth reads, as one line in ggml's order: "f32, f16, q4_0, ..." (for refusals).
std::string_view readable_types();

//! Bytes for n elements, or nullopt when n is not a multiple of the block size or overflows.
std::optional<uint64_t> bytes_for(tensor_type type, uint64_t n);

//! IEEE half / bfloat16 <-> float. fp32 -> half/bf16 round to nearest even; NaN stays NaN.
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t b);
uint16_t fp32_to_bf16(float f);

//! src holds bytes_for(type, dst.size()) bytes; writes dst.size() floats.
void dequantize(tensor_type type, std::span<const std::byte> src, std::span<float> dst);
//! dst holds bytes_for(type, src.size()) bytes. Each block is quantized as ggml's reference
//! quantizer does without an importance matrix (what llama-quantize runs by default).
void quantize(tensor_type type, std::span<const float> src, std::span<std::byte> dst);

}  // namespace hearth
