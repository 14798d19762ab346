// Reference dequantization of ggml's quantized blocks: one plain loop per type (per sub-block,
// then per element), each element's bits located by a formula over its index e in the block, so
// that a reader can check one element by hand. Each product is formed in ggml's order (d * sc
// first), so the floats are ggml's to the bit.
// The formulas restate the loops of llama.cpp's ggml/src/ggml-quants.c dequantize_row_* (commit
// c392e509); tests/test_quant_blocks.cpp checks them against blocks built by hand.
#include <type_traits>

#include "model/quant_blocks.hpp"
#include "model/tensor_types.hpp"

namespace hearth::quant {

void dequantize_q4_0(const std::byte* in, float* out) {
  const auto b = load_block<block_q4_0>(in);
  const float d = fp16_to_fp32(b.d);
  for (uint32_t j = 0; j < qk / 2; ++j) {
    out[j] = d * static_cast<float>((b.qs[j] & 0xf) - 8);
    out[j + qk / 2] = d * static_cast<float>((b.qs[j] >> 4) - 8);
  }
}

void dequantize_q4_1(const std::byte* in, float* out) {
  const auto b = load_block<block_q4_1>(in);
  const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
  for (uint32_t j = 0; j < qk / 2; ++j) {
    out[j] = d * static_cast<float>(b.qs[j] & 0xf) + m;
    out[j + qk / 2] = d * static_cast<float>(b.qs[j] >> 4) + m;
  }
}

namespace {

// Element e's 5-bit value of a q5_0 / q5_1 block: its nibble, and bit e of qh (little-endian u32).
int q5_value(const uint8_t* qs, const uint8_t* qh, uint32_t e) {
  const uint32_t h = uint32_t{qh[0]} | uint32_t{qh[1]} << 8 | uint32_t{qh[2]} << 16 | uint32_t{qh[3]} << 24;
  const int nibble = e < qk / 2 ? (qs[e] & 0xf) : (qs[e - qk / 2] >> 4);
  return nibble | static_cast<int>(((h >> e) & 1) << 4);
}

}  // namespace

void dequantize_q5_0(const std::byte* in, float* out) {
  const auto b = load_block<block_q5_0>(in);
  const float d = fp16_to_fp32(b.d);
  for (uint32_t e = 0; e < qk; ++e) out[e] = d * static_cast<float>(q5_value(b.qs, b.qh, e) - 16);
}

void dequantize_q5_1(const std::byte* in, float* out) {
  const auto b = load_block<block_q5_1>(in);
  const float d = fp16_to_fp32(b.d), m = fp16_to_fp32(b.m);
  for (uint32_t e = 0; e < qk; ++e) out[e] = d * static_cast<float>(q5_value(b.qs, b.qh, e)) + m;
}

void dequantize_q8_0(const std::byte* in, float* out) {
  const auto b = load_block<block_q8_0>(in);
  const float d = fp16_to_fp32(b.d);
  for (uint32_t e = 0; e < qk; ++e) out[e] = d * static_cast<float>(b.qs[e]);
}

void dequantize_iq4_nl(const std::byte* in, float* out) {
  const auto b = load_block<block_iq4_nl>(in);
  const float d = fp16_to_fp32(b.d);
  for (uint32_t j = 0; j < qk / 2; ++j) {
    out[j] = d * static_cast<float>(kvalues_iq4nl[b.qs[j] & 0xf]);
    out[j + qk / 2] = d * static_cast<float>(kvalues_iq4nl[b.qs[j] >> 4]);
  }
}

// q2_K: element e is sub-block e / 16. Its 2 bits are in byte 32 * (e / 128) + e % 32 of qs, at
// bit 2 * ((e / 32) % 4): each run of 128 elements shares 32 bytes, four 2-bit planes of 32.
void dequantize_q2_k(const std::byte* in, float* out) {
  const auto b = load_block<block_q2_K>(in);
  const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
  for (uint32_t j = 0; j < qk_k / 16; ++j) {
    const float dl = d * static_cast<float>(b.scales[j] & 0xf),
                ml = dmin * static_cast<float>(b.scales[j] >> 4);
    for (uint32_t e = 16 * j; e < 16 * j + 16; ++e) {
      const int q = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
      out[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

// q3_K: the low 2 bits as in q2_K; the 3rd bit is bit e / 32 of hmask[e % 32], and a clear bit
// means "subtract 4" (q - 4 in [-4, 3]). Sub-block e / 16's scale: q3_k_scale.
void dequantize_q3_k(const std::byte* in, float* out) {
  const auto b = load_block<block_q3_K>(in);
  const float d = fp16_to_fp32(b.d);
  for (uint32_t j = 0; j < qk_k / 16; ++j) {
    const float dl = d * static_cast<float>(q3_k_scale(j, b.scales));
    for (uint32_t e = 16 * j; e < 16 * j + 16; ++e) {
      const int low = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
      const int high = (b.hmask[e % 32] >> (e / 32)) & 1;
      out[e] = dl * static_cast<float>(low - (high ? 0 : 4));
    }
  }
}

// q4_K and q5_K: element e is sub-block e / 32; its nibble is in byte 32 * (e / 64) + e % 32 of qs,
// the low nibble for the first 32 elements of each 64, the high one for the next 32; q5_K's 5th
// bit is bit e / 32 of qh[e % 32].
template <class Block>
void dequantize_k4(const std::byte* in, float* out) {
  const auto b = load_block<Block>(in);
  const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
  for (uint32_t j = 0; j < qk_k / 32; ++j) {
    uint8_t sc = 0, m = 0;
    get_scale_min_k4(j, b.scales, sc, m);
    const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
    for (uint32_t e = 32 * j; e < 32 * j + 32; ++e) {
      const uint8_t byte = b.qs[32 * (e / 64) + e % 32];
      int q = (e % 64) < 32 ? (byte & 0xf) : (byte >> 4);
      if constexpr (std::is_same_v<Block, block_q5_K>) q |= ((b.qh[e % 32] >> (e / 32)) & 1) << 4;
      out[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

void dequantize_q4_k(const std::byte* in, float* out) {
  dequantize_k4<block_q4_K>(in, out);
}

void dequantize_q5_k(const std::byte* in, float* out) {
  dequantize_k4<block_q5_K>(in, out);
}

// q6_K: each half of 128 elements (h = e / 128) has 64 bytes of ql and 32 of qh. Within a half,
// group g = (e % 128) / 32 and lane l = e % 32: the low 4 bits are in ql[64 h + 32 (g % 2) + l]
// (low nibble for g < 2, high for g >= 2), the high 2 bits in qh[32 h + l] at bit 2 g. Sub-block
// e / 16 has the int8 scale scales[e / 16].
void dequantize_q6_k(const std::byte* in, float* out) {
  const auto b = load_block<block_q6_K>(in);
  const float d = fp16_to_fp32(b.d);
  for (uint32_t j = 0; j < qk_k / 16; ++j) {
    const float dl = d * static_cast<float>(b.scales[j]);
    for (uint32_t e = 16 * j; e < 16 * j + 16; ++e) {
      const uint32_t h = e / 128, g = (e % 128) / 32, l = e % 32;
      const uint8_t low_byte = b.ql[64 * h + 32 * (g % 2) + l];
      const int low = g < 2 ? (low_byte & 0xf) : (low_byte >> 4);
      const int high = (b.qh[32 * h + l] >> (2 * g)) & 3;
      out[e] = dl * static_cast<float>((low | (high << 4)) - 32);
    }
  }
}

void dequantize_q8_k(const std::byte* in, float* out) {
  const auto b = load_block<block_q8_K>(in);
  for (uint32_t e = 0; e < qk_k; ++e) out[e] = b.d * static_cast<float>(b.qs[e]);
}

}  // namespace hearth::quant
