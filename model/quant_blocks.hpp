#pragma once
// ggml's quantized blocks, byte for byte, and the per-block codecs of model/ (not part of the
// public API: model/tensor_types.hpp is). Every struct below is the layout of the ggml struct of
// the same name in llama.cpp's ggml/src/ggml-common.h (read at commit c392e509, build b4748);
// the static_asserts pin the sizes ggml asserts. Halves are IEEE f16 bit patterns (ggml_half),
// all integers little-endian. Blocks are copied in and out with memcpy: tensor data in a mapped
// file is only as aligned as its block size allows (18-byte blocks put halves at odd addresses
// of 4), so no code here forms a pointer to a block inside the file.
//
//   type    block  bytes  decodes as (q: the stored integer of one element)
//   q4_0     32     18    d * (q - 8),   q 4 bits
//   q4_1     32     20    d * q + m,     q 4 bits
//   q5_0     32     22    d * (q - 16),  q 5 bits (4 in qs, the 5th in qh)
//   q5_1     32     24    d * q + m,     q 5 bits
//   q8_0     32     34    d * q,         q int8
//   iq4_nl   32     18    d * kvalues_iq4nl[q], q 4 bits (a non-linear table)
//   q2_K    256     84    d*sc * q - dmin*m,  16 sub-blocks of 16, sc/m 4 bits, q 2 bits
//   q3_K    256    110    d*(sc - 32) * (q - 4), 16 sub-blocks of 16, sc 6 bits, q 3 bits
//   q4_K    256    144    d*sc * q - dmin*m,  8 sub-blocks of 32, sc/m 6 bits, q 4 bits
//   q5_K    256    176    d*sc * q - dmin*m,  8 sub-blocks of 32, sc/m 6 bits, q 5 bits
//   q6_K    256    210    d*sc * (q - 32),    16 sub-blocks of 16, sc int8, q 6 bits
//   q8_K    256    292    d * q, d a float, q int8, with bsums: sums of 16 q (for dot products)
// In the 32-element types, byte j of qs holds element j (low nibble) and element j + 16 (high).
// The K types' element orders are written beside each decoder in quant_dequantize.cpp.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hearth::quant {

constexpr uint32_t qk = 32;            //!< elements per block of the 32-element types (QK4_0 ... QK4_NL)
constexpr uint32_t qk_k = 256;         //!< elements per super-block of the K types (QK_K)
constexpr uint32_t k_scale_size = 12;  //!< K_SCALE_SIZE: 8 6-bit scales + 8 6-bit mins, packed

// ggml-common.h block_q4_0
struct block_q4_0 {
  uint16_t d;
  uint8_t qs[qk / 2];
};
// ggml-common.h block_q4_1
struct block_q4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[qk / 2];
};
// ggml-common.h block_q5_0: qh bit j is the 5th bit of element j.
struct block_q5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[qk / 2];
};
// ggml-common.h block_q5_1
struct block_q5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[qk / 2];
};
// ggml-common.h block_q8_0
struct block_q8_0 {
  uint16_t d;
  int8_t qs[qk];
};
// ggml-common.h block_iq4_nl
struct block_iq4_nl {
  uint16_t d;
  uint8_t qs[qk / 2];
};
// ggml-common.h block_q2_K: scales[j] = sub-block j's scale (low nibble) and min (high nibble).
struct block_q2_K {
  uint8_t scales[qk_k / 16];
  uint8_t qs[qk_k / 4];
  uint16_t d;
  uint16_t dmin;
};
// ggml-common.h block_q3_K: hmask holds the 3rd bit of each element; scales packs 16 6-bit values.
struct block_q3_K {
  uint8_t hmask[qk_k / 8];
  uint8_t qs[qk_k / 4];
  uint8_t scales[12];
  uint16_t d;
};
// ggml-common.h block_q4_K
struct block_q4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[k_scale_size];
  uint8_t qs[qk_k / 2];
};
// ggml-common.h block_q5_K
struct block_q5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[k_scale_size];
  uint8_t qh[qk_k / 8];
  uint8_t qs[qk_k / 2];
};
// ggml-common.h block_q6_K
struct block_q6_K {
  uint8_t ql[qk_k / 2];
  uint8_t qh[qk_k / 4];
  int8_t scales[qk_k / 16];
  uint16_t d;
};
// ggml-common.h block_q8_K
struct block_q8_K {
  float d;
  int8_t qs[qk_k];
  int16_t bsums[qk_k / 16];
};

static_assert(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20 && sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24 && sizeof(block_q8_0) == 34 && sizeof(block_iq4_nl) == 18);
static_assert(sizeof(block_q2_K) == 84 && sizeof(block_q3_K) == 110 && sizeof(block_q4_K) == 144);
static_assert(sizeof(block_q5_K) == 176 && sizeof(block_q6_K) == 210 && sizeof(block_q8_K) == 292);

//! ggml-quants.c kvalues_iq4nl: the 16 levels of iq4_nl, denser near zero.
constexpr int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                      1,    13,   25,  38,  53,  69,  89,  113};

template <class Block>
Block load_block(const std::byte* p) {
  Block b;
  std::memcpy(&b, p, sizeof b);
  return b;
}

template <class Block>
void store_block(const Block& b, std::byte* p) {
  std::memcpy(p, &b, sizeof b);
}

//! The element of largest magnitude, with its sign (the first one on ties): what ggml's
//! quantizers scale a block or its sub-block scales by.
inline float signed_absmax(const float* x, uint32_t n) {
  float amax = 0, max = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

//! Sub-block j's 6-bit scale and min of a q4_K / q5_K block (ggml-quants.c get_scale_min_k4):
//! j < 4 keep them in the low 6 bits of bytes j and j + 4; j >= 4 split them into the nibbles of
//! byte j + 4 and the top 2 bits of bytes j - 4 (scale) and j (min).
inline void get_scale_min_k4(uint32_t j, const uint8_t* s, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

//! The inverse: packs 8 6-bit scales and mins (each <= 63) as get_scale_min_k4 reads them.
inline void set_scales_mins_k4(const uint8_t* sc, const uint8_t* m, uint8_t* s) {
  std::memset(s, 0, k_scale_size);
  for (uint32_t j = 0; j < 8; ++j) {
    if (j < 4) {
      s[j] = sc[j];
      s[j + 4] = m[j];
    } else {
      s[j + 4] = static_cast<uint8_t>((sc[j] & 0xf) | ((m[j] & 0xf) << 4));
      s[j - 4] = static_cast<uint8_t>(s[j - 4] | ((sc[j] >> 4) << 6));
      s[j] = static_cast<uint8_t>(s[j] | ((m[j] >> 4) << 6));
    }
  }
}

//! Sub-block j's scale of a q3_K block, in [-32, 31]: the low 4 bits are a nibble of bytes 0-7
//! (j < 8: low nibble of byte j, else high nibble of byte j - 8), the high 2 bits sit in byte
//! 8 + j % 4 at bit 2 * (j / 4); the stored 6-bit value is offset by 32.
inline int q3_k_scale(uint32_t j, const uint8_t* s) {
  const int low = j < 8 ? (s[j] & 0xf) : (s[j - 8] >> 4);
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

//! The inverse: packs 16 scales, each stored + 32 in [0, 63].
inline void set_q3_k_scales(const uint8_t* stored, uint8_t* s) {
  std::memset(s, 0, 12);
  for (uint32_t j = 0; j < 16; ++j) {
    const uint8_t l = stored[j];
    if (j < 8) {
      s[j] = l & 0xf;
    } else {
      s[j - 8] = static_cast<uint8_t>(s[j - 8] | ((l & 0xf) << 4));
    }
    s[8 + j % 4] = static_cast<uint8_t>(s[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
  }
}

// One block at a time: `in` holds one block's bytes, `out` its elements (or the reverse).
// quant_dequantize.cpp
void dequantize_q4_0(const std::byte* in, float* out);
void dequantize_q4_1(const std::byte* in, float* out);
void dequantize_q5_0(const std::byte* in, float* out);
void dequantize_q5_1(const std::byte* in, float* out);
void dequantize_q8_0(const std::byte* in, float* out);
void dequantize_iq4_nl(const std::byte* in, float* out);
void dequantize_q2_k(const std::byte* in, float* out);
void dequantize_q3_k(const std::byte* in, float* out);
void dequantize_q4_k(const std::byte* in, float* out);
void dequantize_q5_k(const std::byte* in, float* out);
void dequantize_q6_k(const std::byte* in, float* out);
void dequantize_q8_k(const std::byte* in, float* out);
// quantize_legacy.cpp
void quantize_q4_0(const float* in, std::byte* out);
void quantize_q4_1(const float* in, std::byte* out);
void quantize_q5_0(const float* in, std::byte* out);
void quantize_q5_1(const float* in, std::byte* out);
void quantize_q8_0(const float* in, std::byte* out);
void quantize_iq4_nl(const float* in, std::byte* out);
// quantize_k.cpp
void quantize_q2_k(const float* in, std::byte* out);
void quantize_q3_k(const float* in, std::byte* out);
void quantize_q4_k(const float* in, std::byte* out);
void quantize_q5_k(const float* in, std::byte* out);
void quantize_q6_k(const float* in, std::byte* out);
void quantize_q8_k(const float* in, std::byte* out);

}  // namespace hearth::quant
