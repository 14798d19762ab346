#include "kernels/dpbf16_matmul.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/parallel.hpp"

// Built for any x86-64: only the kernel's own functions carry the AVX-512 BF16 target, and they run
// only where dpbf16_available().

namespace hearth {
namespace {

constexpr uint32_t block_cols = 64, block_k = 16, block_elems = block_cols * block_k;

#define HEARTH_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

HEARTH_BF16_TARGET inline __m512bh as_bf16(__m512i v) {
  __m512bh out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}

//! Columns [64 nb, 64 nb + cols) of M rows: four accumulators of 16 columns per row, each vdpbf16ps
//! taking one k pair of 16 columns (64 contiguous bytes) against that pair of x broadcast.
template <uint32_t M>
HEARTH_BF16_TARGET void column_block(const uint16_t* w, uint32_t kb, const uint16_t* x, uint32_t k_pad,
                                     uint32_t cols, const float* bias, float* y, size_t ldy) {
  __m512 acc[M][4];
  for (auto& row : acc)
    for (auto& a : row) a = _mm512_setzero_ps();
  for (uint32_t b = 0; b < kb; ++b, w += block_elems) {
#pragma GCC unroll 8
    for (uint32_t p = 0; p < block_k / 2; ++p) {
      __m512bh wv[4];
      for (uint32_t c = 0; c < 4; ++c)
        wv[c] = as_bf16(_mm512_loadu_si512(reinterpret_cast<const void*>(w + p * 2 * block_cols + 32 * c)));
      for (uint32_t r = 0; r < M; ++r) {
        uint32_t pair;
        std::memcpy(&pair, x + size_t{r} * k_pad + b * block_k + 2 * p, sizeof pair);
        const __m512bh xv = as_bf16(_mm512_set1_epi32(static_cast<int>(pair)));
        for (uint32_t c = 0; c < 4; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], wv[c], xv);
      }
    }
  }
  for (uint32_t c = 0; c < 4 && 16 * c < cols; ++c) {
    const uint32_t here = std::min(16u, cols - 16 * c);
    const __mmask16 mask = static_cast<__mmask16>((1u << here) - 1);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(mask, bias + 16 * c) : _mm512_setzero_ps();
    for (uint32_t r = 0; r < M; ++r)
      _mm512_mask_storeu_ps(y + r * ldy + 16 * c, mask, _mm512_add_ps(acc[r][c], b));
  }
}

//! Rows [0, m) of one column block, up to 6 at a pass (24 accumulators, 4 weight vectors and a
//! broadcast of AVX-512's 32 registers): the first pass reads the block from memory, the later
//! ones from L2 (K x 128 bytes: 256 KiB at K = 2048).
void column_rows(const uint16_t* w, uint32_t kb, const uint16_t* x, uint32_t k_pad, uint32_t m, uint32_t cols,
                 const float* bias, float* y, size_t ldy) {
  for (uint32_t i = 0; i < m;) {
    const uint32_t rows = std::min(6u, m - i);
    const uint16_t* xi = x + size_t{i} * k_pad;
    float* yi = y + i * ldy;
    switch (rows) {
      case 6:
        column_block<6>(w, kb, xi, k_pad, cols, bias, yi, ldy);
        break;
      case 5:
        column_block<5>(w, kb, xi, k_pad, cols, bias, yi, ldy);
        break;
      case 4:
        column_block<4>(w, kb, xi, k_pad, cols, bias, yi, ldy);
        break;
      case 3:
        column_block<3>(w, kb, xi, k_pad, cols, bias, yi, ldy);
        break;
      case 2:
        column_block<2>(w, kb, xi, k_pad, cols, bias, yi, ldy);
        break;
      default:
        column_block<1>(w, kb, xi, k_pad, cols, bias, yi, ldy);
    }
    i += rows;
  }
}

}  // namespace

bool dpbf16_available() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

void dpbf16_matmul(const uint16_t* w, uint32_t k_pad, uint32_t n, const uint16_t* x, uint32_t m,
                   const float* bias, float* y, size_t ldy) {
  const uint32_t kb = k_pad / block_k, blocks = (n + block_cols - 1) / block_cols;
  parallel_for(blocks, [&](size_t i) {
    const auto nb = static_cast<uint32_t>(i);
    const uint32_t first = nb * block_cols;
    column_rows(w + size_t{nb} * kb * block_elems, kb, x, k_pad, m, std::min(block_cols, n - first),
                bias ? bias + first : nullptr, y + first, ldy);
  });
}

}  // namespace hearth
