#pragma once
// What the AVX-512 BF16 kernels share (dpbf16_matmul.cpp, attention_bf16.cpp), internal to
// kernels/. Every function carries the target itself, so its file builds for any x86-64; callers
// run them only where dpbf16_available() (dpbf16_matmul.hpp).

#include <immintrin.h>

#include <cstring>

#define HEARTH_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace hearth::avx512_bf16 {

HEARTH_BF16_TARGET inline __m512bh as_bf16(__m512i v) {
  __m512bh out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}

HEARTH_BF16_TARGET inline __m512i as_int(__m512bh v) {
  __m512i out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}

// GCC 12's AVX-512 unpack intrinsics pass _mm512_undefined_epi32() as their unused source, which
// its -Wmaybe-uninitialized then reports once inlined (GCC bug 105593, fixed in 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
//! 64 bytes read as two 32-byte halves joined (why: dpbf16_matmul.cpp's load_weights).
HEARTH_BF16_TARGET inline __m512i load_joined(const void* at) {
  const auto* half = static_cast<const __m256i*>(at);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(half)), _mm256_loadu_si256(half + 1),
                            1);
}

//! 16 rows of 16 dwords (a row's 16 k pairs) -> 16 of one k pair each (its 16 rows, in order):
//! pairs within 128-bit lanes, then quads, then the lanes across the four 4-row groups.
HEARTH_BF16_TARGET inline void transpose_16x16(__m512i (&r)[16]) {
  __m512i a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int j = 0; j < 4; ++j) {  // b[4 j + q], lane L: rows 4 j .. 4 j + 3 at pair 4 L + q
    b[4 * j] = _mm512_unpacklo_epi64(a[4 * j], a[4 * j + 2]);
    b[4 * j + 1] = _mm512_unpackhi_epi64(a[4 * j], a[4 * j + 2]);
    b[4 * j + 2] = _mm512_unpacklo_epi64(a[4 * j + 1], a[4 * j + 3]);
    b[4 * j + 3] = _mm512_unpackhi_epi64(a[4 * j + 1], a[4 * j + 3]);
  }
  for (int q = 0; q < 4; ++q) {
    const __m512i c = _mm512_shuffle_i32x4(b[q], b[4 + q], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512i d = _mm512_shuffle_i32x4(b[q], b[4 + q], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512i e = _mm512_shuffle_i32x4(b[8 + q], b[12 + q], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512i f = _mm512_shuffle_i32x4(b[8 + q], b[12 + q], _MM_SHUFFLE(3, 1, 3, 1));
    r[q] = _mm512_shuffle_i32x4(c, e, _MM_SHUFFLE(2, 0, 2, 0));
    r[8 + q] = _mm512_shuffle_i32x4(c, e, _MM_SHUFFLE(3, 1, 3, 1));
    r[4 + q] = _mm512_shuffle_i32x4(d, f, _MM_SHUFFLE(2, 0, 2, 0));
    r[12 + q] = _mm512_shuffle_i32x4(d, f, _MM_SHUFFLE(3, 1, 3, 1));
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace hearth::avx512_bf16
