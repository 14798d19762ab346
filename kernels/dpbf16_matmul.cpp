#include "kernels/dpbf16_matmul.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/avx512_bf16.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/parallel.hpp"

// Built for any x86-64: only the kernel's own functions carry the AVX-512 BF16 target, and they run
// only where dpbf16_available().

namespace hearth {
namespace {

using namespace avx512_bf16;

constexpr uint32_t block_cols = dpbf16_block_cols, block_k = 16, block_elems = block_cols * block_k;
constexpr uint32_t item_rows = 48;  // rows of one parallel item: 8 passes over its block from L2

//! Cache lines [0, lines) from `ahead`, asked for into L2 by a pass, lines / kb per k block.
struct prefetch_span {
  const char* ahead = nullptr;
  uint32_t lines = 0;
};

//! Columns [64 nb, 64 nb + cols) of M rows: four accumulators of 16 columns per row, each vdpbf16ps
//! taking one k pair of 16 columns (64 contiguous bytes) against that pair of x broadcast.

template <uint32_t M>
HEARTH_BF16_TARGET void column_block(const uint16_t* w, uint32_t kb, const uint16_t* x, uint32_t k_pad,
                                     uint32_t cols, const float* bias, float* y, size_t ldy,
                                     prefetch_span pf) {
  __m512 acc[M][4];
  for (auto& row : acc)
    for (auto& a : row) a = _mm512_setzero_ps();
  for (uint32_t b = 0; b < kb; ++b, w += block_elems) {
    for (uint32_t i = b * pf.lines / kb; i < (b + 1) * pf.lines / kb; ++i)
      _mm_prefetch(pf.ahead + size_t{i} * 64, _MM_HINT_T1);
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
using pass_fn = void (*)(const uint16_t*, uint32_t, const uint16_t*, uint32_t, uint32_t, const float*, float*,
                         size_t, prefetch_span);
constexpr pass_fn passes[] = {column_block<1>, column_block<2>, column_block<3>,
                              column_block<4>, column_block<5>, column_block<6>};

//! dpbf16_matmul_block, its passes asking for `next` (the same size, or null) into L2 a share each.
void block_passes(const uint16_t* w, uint32_t k_pad, uint32_t cols, const uint16_t* x, uint32_t m,
                  const float* bias, float* y, size_t ldy, const uint16_t* next) {
  const uint32_t kb = k_pad / block_k, n_passes = (m + 5) / 6;
  const uint32_t lines = next ? kb * block_elems * 2 / 64 : 0;
  for (uint32_t p = 0, i = 0; i < m; ++p) {
    const uint32_t rows = std::min(6u, m - i);
    const uint32_t first = p * lines / n_passes;
    const prefetch_span pf = next ? prefetch_span{reinterpret_cast<const char*>(next) + size_t{first} * 64,
                                                  (p + 1) * lines / n_passes - first}
                                  : prefetch_span{};
    passes[rows - 1](w, kb, x + size_t{i} * k_pad, k_pad, cols, bias, y + i * ldy, ldy, pf);
    i += rows;
  }
}

}  // namespace

void dpbf16_matmul_block(const uint16_t* w, uint32_t k_pad, uint32_t cols, const uint16_t* x, uint32_t m,
                         const float* bias, float* y, size_t ldy) {
  block_passes(w, k_pad, cols, x, m, bias, y, ldy, nullptr);
}

namespace {

HEARTH_BF16_TARGET void pack_group(const float* v, size_t ldv, uint32_t rows, uint32_t n_k,
                                   uint16_t* column) {
  for (uint32_t k0 = 0; k0 < n_k; k0 += 32) {
    __m512i r[16];
    for (uint32_t i = 0; i < 16; ++i) {
      const float* at = v + i * ldv + k0;
      // vcvtne2ps2bf16 rounds to nearest even, as to_bf16; its second operand fills the low half.
      r[i] = i < rows ? as_int(_mm512_cvtne2ps_pbh(_mm512_loadu_ps(at + 16), _mm512_loadu_ps(at)))
                      : _mm512_setzero_si512();
    }
    transpose_16x16(r);
    uint16_t* block = column + size_t{k0 / block_k} * block_elems;
    for (uint32_t p = 0; p < 16; ++p)  // pair p: k0 + 2 p, line p % 8 of k block p / 8
      _mm512_storeu_si512(block + (p / 8) * block_elems + (p % 8) * 2 * block_cols, r[p]);
  }
}

}  // namespace

void dpbf16_pack_rows(const float* v, size_t ldv, uint32_t rows, uint32_t k0, uint32_t n_k, uint32_t n_in,
                      uint32_t n0, uint16_t* slice) {
  for (uint32_t g = 0; g < rows; g += 16) {
    const uint32_t n = n0 + g;
    pack_group(v + g * ldv, ldv, std::min(16u, rows - g), n_k,
               slice + (size_t{n / block_cols} * (n_in / block_k) + k0 / block_k) * block_elems +
                   (n % block_cols) * 2);
  }
}

bool dpbf16_available() {
  return cpu_has(cpu_feature::avx512f) && cpu_has(cpu_feature::avx512bw) && cpu_has(cpu_feature::avx512vl) &&
         cpu_has(cpu_feature::avx512_bf16);
}

void dpbf16_matmul(const uint16_t* w, uint32_t k_pad, uint32_t n, const uint16_t* x, uint32_t m,
                   const float* bias, float* y, size_t ldy) {
  const uint32_t kb = k_pad / block_k, blocks = (n + block_cols - 1) / block_cols;
  const auto block = [&](uint32_t nb, uint32_t r0, uint32_t rows, const uint16_t* next) {
    const uint32_t first = nb * block_cols;
    block_passes(w + size_t{nb} * kb * block_elems, k_pad, std::min(block_cols, n - first),
                 x + size_t{r0} * k_pad, rows, bias ? bias + first : nullptr, y + r0 * ldy + first, ldy,
                 next);
  };
  if (m > 6 && m <= item_rows) {
    // Several passes over each block: the first reads it from memory while the others compute from
    // L2, so each thread takes a run of blocks and its passes over one ask for the next into L2.
    const auto threads = static_cast<uint32_t>(std::min<size_t>(kernel_threads(), blocks));
    parallel_for(threads, [&](size_t t) {
      const uint32_t b0 = blocks * static_cast<uint32_t>(t) / threads,
                     b1 = blocks * static_cast<uint32_t>(t + 1) / threads;
      for (uint32_t nb = b0; nb < b1; ++nb)
        block(nb, 0, m, nb + 1 < b1 ? w + size_t{nb + 1} * kb * block_elems : nullptr);
    });
    return;
  }
  // Items of a column block and up to 48 rows (8 passes over the block from L2): a prefill chunk
  // over a slice of a few blocks still gives every thread work.
  const uint32_t row_items = (m + item_rows - 1) / item_rows;
  parallel_for(
      size_t{blocks} * row_items,
      [&](size_t i) {
        const auto r0 = static_cast<uint32_t>(i % row_items) * item_rows;
        block(static_cast<uint32_t>(i / row_items), r0, std::min(item_rows, m - r0), nullptr);
      },
      schedule::streaming);
}

}  // namespace hearth
