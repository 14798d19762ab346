#pragma once
// File types and quantization mixes, as llama.cpp's llama-quantize presets define them: a file
// type (include/llama.h enum llama_ftype, recorded as general.file_type) names a base tensor
// type, and the preset's rules (src/llama-quant.cpp llama_tensor_get_type, llama.cpp commit
// c392e509) give some tensors more bits: the output head, attn_v and ffn_down in the _M and _L
// mixes, attn_output in the low-bit ones. Tensors whose rows are not whole blocks of the chosen
// type fall back to a 32-element type (q4_K -> q5_0, q6_K -> q8_0, ...).

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "model/tensor_types.hpp"

namespace hearth {

//! llama.cpp's LLAMA_FTYPE numbers, for the presets Hearth writes.
enum class file_type : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q8_0 = 7,
  q5_0 = 8,
  q5_1 = 9,
  q2_k = 10,
  q3_k_s = 11,
  q3_k_m = 12,
  q3_k_l = 13,
  q4_k_s = 14,
  q4_k_m = 15,
  q5_k_s = 16,
  q5_k_m = 17,
  q6_k = 18,
  bf16 = 32,
};

//! Every file type Hearth writes, in llama.cpp's order.
std::span<const file_type> file_types();
//! "q4_k_m", as llama-quantize spells its presets (lower case).
const char* to_string(file_type ft);
//! Parses a preset name in any case ("q4_k_m", "Q4_K_M").
std::optional<file_type> file_type_from_name(std::string_view name);
//! The type of most of the file's matrices (q4_k_m -> q4_K).
tensor_type base_type(file_type ft);
//! What a file whose matrices are all of type t records, as llama.cpp's loader guesses it from
//! the commonest type (q4_K -> q4_k_m); nullopt for q8_K and iq4_nl, which no preset here names.
std::optional<file_type> file_type_of(tensor_type t);

//! What the rules read of the model besides the tensor's own name and row length.
struct mix_model {
  uint32_t n_layer = 1;
  uint32_t n_gqa = 1;      //!< n_head / n_head_kv
  bool has_output = true;  //!< false: token_embd.weight is the head as well and is typed as one
};

//! Whether llama-quantize quantizes a tensor at all: a ".weight" of two or more dims that is not
//! a norm (norms, biases and rope_freqs stay f32).
bool is_quantized_tensor(std::string_view name, size_t n_dims);

//! The type llama-quantize gives tensor `name` (GGUF name, e.g. "blk.3.attn_v.weight"), whose
//! rows are ne0 elements, in a file of type ft. For f32/f16/bf16 files: that type.
tensor_type tensor_type_for(file_type ft, std::string_view name, uint64_t ne0, const mix_model& m);

}  // namespace hearth
