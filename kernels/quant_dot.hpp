#pragma once
// Dot products of quantized weight rows, in ggml's block layouts exactly as a GGUF file stores
// them (read in place from the mapped file), against activations quantized to 8 bits per block
// of 32, the way llama.cpp's vec_dot kernels work. Internal to kernels/; stateless, so every
// variant is tested against the reference dequantization without a model.
//
// Every type is read as the same thing: per 32-element block, 32 unsigned integers n (at most
// 6 bits) and, for each half of 16, a scale s and an offset o, so that w = s n + o (q8_0's signed
// bytes are the one exception, multiplied by their magnitude against the activation's sign
// flipped). Then w . x over a block is s_x (s Σ n q_x) + o Σ x, with Σ n q_x from vpmaddubsw +
// vpmaddwd (AVX2) or vpdpbusd (AVX-512 VNNI), and Σ x kept beside each activation block.

#include <cstddef>
#include <cstdint>

#include "model/tensor_types.hpp"

namespace hearth::quant {

//! ggml's numbers of the types with dot kernels.
namespace type_number {
inline constexpr uint32_t q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8, q2_K = 10, q3_K = 11, q4_K = 12,
                          q5_K = 13, q6_K = 14;
}  // namespace type_number

//! 32 activations: x ≈ d q.
struct act_block {
  float d;
  int8_t q[32];
};

//! The largest batch whose dots read activations::lanes; above it lanes may be null.
inline constexpr uint32_t lanes_max_rows = 3;
//! Bytes of activations::lanes a row of n values takes: q4_K's and q6_K's one-row orders, n each,
//! then the wide variant's q4_K pairs, n bytes and a float4 a pair (see quantize_activations).
constexpr size_t lanes_bytes(uint32_t n) {
  return 3 * size_t{n} + n / 32;
}

//! m rows of quantized activations, each n_in / 32 blocks and n_in / 16 sums of each kind apart;
//! at batches up to lanes_max_rows also each row's values rearranged for the one-row dots
//! (lanes_bytes(n_in) a row, see quantize_activations).
struct activations {
  const act_block* x;
  const float* dsum;
  const int16_t* bsum;
  const int8_t* lanes;
};

//! avx512_vnni_zmm: avx512_vnni's kernels with every whole group of 16 weight rows in a zmm (where
//! a type has eight-row decoders, quant_rows8.inc), not only q4_0's from 8 activation rows on, and
//! the one-row dots of q4_K and q6_K (two super-blocks to a zmm) and q8_0 (two blocks) in zmm
//! (quant_wide.inc). A core with full-width 512-bit units runs the groups ~1.5 x as fast from 4
//! activation rows on (AMD EPYC Zen 5, q4_K at m = 16 in cache: 357 against 232 GOPS) and the
//! one-row dots 1.2-1.9 x in cache; one that splits a zmm in two (Zen 4) no faster. CPUID cannot
//! tell the two apart: the kernel tuner measures both (quant-dot-zmm).
enum class isa { avx2, avx512_vnni, avx512_vnni_zmm };
//! "avx2", "avx512-vnni", "avx512-vnni-zmm".
const char* to_string(isa i);
bool isa_available(isa i);
//! The fastest variant this CPU runs (avx2 when none does: callers check isa_available(avx2)).
isa best_isa();

//! x (n,) -> n / 32 blocks; dsum (n / 16,): d Σ q over each 16, what the 32-element types'
//! offsets multiply; bsum (n / 16,): Σ q over each 16, what the K types' integer mins multiply.
//! d = max |x| / 127 over each group of `group` elements (32, or 256: what the K types' dots
//! need, one scale per super-block), q = x / d rounded to nearest even; n is a multiple of group.
//! With group 256, lanes (lanes_bytes(n),) gets the same q in the orders q4_K's and q6_K's
//! one-row dots read them (quant_lanes.inc), and with avx512_vnni_zmm in pairs of super-blocks
//! after them, as q4_K's wide one-row dots read them (quant_wide.inc); with group 32 and
//! avx512_vnni_zmm, in one run beside the blocks' scales and sums, as q8_0's read them. Other
//! variants leave lanes untouched.
void quantize_activations(isa variant, const float* x, uint32_t n, uint32_t group, act_block* out,
                          float* dsum, int16_t* bsum, int8_t* lanes);

//! Whether `type` has dot kernels (every ggml type Hearth reads except f32/f16/bf16).
bool has_dot(tensor_type type);

//! y[i * ldy + r] = W row r . x row i, for r < rows, i < m. W: rows of n_in elements of `type`,
//! row_bytes apart; x: m rows, quantized in groups of 256 for the K types (q2_K ... q6_K). One
//! thread; callers split the rows.
void dot_rows(isa variant, tensor_type type, const std::byte* w, size_t row_bytes, uint32_t rows,
              uint32_t n_in, const activations& x, uint32_t m, float* y, size_t ldy);

//! out (rows, n_in) f32 = W rows dequantized, with the same decoding the dots use.
void dequantize_rows(isa variant, tensor_type type, const std::byte* w, size_t row_bytes, uint32_t rows,
                     uint32_t n_in, float* out);

}  // namespace hearth::quant
