#include "kernels/dpbf16_matmul.hpp"

#include <algorithm>
#include <cassert>
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
constexpr uint32_t item_rows = 48;  // rows of one parallel item: 8 passes over each region
constexpr uint32_t pass_rows = 6;   // 24 accumulators, 4 weight vectors and a broadcast of 32 registers

//! Cache lines [0, lines) from `ahead`, asked for into L1 by a pass, lines / (its k blocks) a k block.
struct prefetch_span {
  const char* ahead = nullptr;
  uint32_t lines = 0;
};

//! Where the last region's pass puts its rows: y (M, cols) = the sums + bias (cols,) unless null.
struct pass_out {
  const float* bias;
  float* y;
  size_t ldy;
  uint32_t cols;
};

//! 32 bf16 weights. A single row's pass reads them as two 32-byte halves joined: the pass streams
//! its weights from memory with one vdpbf16ps each, and so `small`'s matmuls at m = 1 took 0.90-0.92
//! x the time of 64-byte loads with regions of 8 k blocks, ~0.95 x with regions of 2 (AMD EPYC Zen
//! 5, alternating in one process); no faster at m = 2-8, and 1.08 x at m = 16, where the shuffle
//! that joins them counts.
template <bool joined>
HEARTH_BF16_TARGET inline __m512bh load_weights(const uint16_t* w) {
  if constexpr (joined) return as_bf16(load_joined(w));
  return as_bf16(_mm512_loadu_si512(reinterpret_cast<const void*>(w)));
}

//! k blocks [kb0, kb1) of columns [64 nb, 64 nb + 64) for M rows, added to the sums of the k
//! blocks before (none at kb0 = 0), kept in acc_io (M x 64 f32) between regions, or with `out`
//! stored there: four accumulators of 16 columns per row, each vdpbf16ps taking one k pair of 16
//! columns (64 contiguous bytes) against that pair of x broadcast.
template <uint32_t M>
HEARTH_BF16_TARGET void column_pass(const uint16_t* w, uint32_t kb0, uint32_t kb1, const uint16_t* x,
                                    uint32_t k_pad, float* acc_io, prefetch_span pf, const pass_out* out) {
  __m512 acc[M][4];
  for (uint32_t r = 0; r < M; ++r)
    for (uint32_t c = 0; c < 4; ++c)
      acc[r][c] = kb0 ? _mm512_load_ps(acc_io + block_cols * r + 16 * c) : _mm512_setzero_ps();
  // The lines spread evenly over the k blocks, in 16.16 fixed point: no division in the loop.
  const uint32_t step = (pf.lines << 16) / (kb1 - kb0);
  uint32_t line = 0, due = 0;
  w += size_t{kb0} * block_elems;
  for (uint32_t b = kb0; b < kb1; ++b, w += block_elems) {
    for (due += step; line < due >> 16; ++line) _mm_prefetch(pf.ahead + size_t{line} * 64, _MM_HINT_T0);
#pragma GCC unroll 8
    for (uint32_t p = 0; p < block_k / 2; ++p) {
      __m512bh wv[4];
      for (uint32_t c = 0; c < 4; ++c) wv[c] = load_weights<M == 1>(w + p * 2 * block_cols + 32 * c);
      for (uint32_t r = 0; r < M; ++r) {
        uint32_t pair;
        std::memcpy(&pair, x + size_t{r} * k_pad + b * block_k + 2 * p, sizeof pair);
        const __m512bh xv = as_bf16(_mm512_set1_epi32(static_cast<int>(pair)));
        for (uint32_t c = 0; c < 4; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], wv[c], xv);
      }
    }
  }
  if (!out) {
    for (uint32_t r = 0; r < M; ++r)
      for (uint32_t c = 0; c < 4; ++c) _mm512_store_ps(acc_io + block_cols * r + 16 * c, acc[r][c]);
    return;
  }
  for (uint32_t c = 0; c < 4 && 16 * c < out->cols; ++c) {
    const uint32_t here = std::min(16u, out->cols - 16 * c);
    const __mmask16 mask = static_cast<__mmask16>((1u << here) - 1);
    const __m512 b = out->bias ? _mm512_maskz_loadu_ps(mask, out->bias + 16 * c) : _mm512_setzero_ps();
    for (uint32_t r = 0; r < M; ++r)
      _mm512_mask_storeu_ps(out->y + r * out->ldy + 16 * c, mask, _mm512_add_ps(acc[r][c], b));
  }
}

using pass_fn = void (*)(const uint16_t*, uint32_t, uint32_t, const uint16_t*, uint32_t, float*,
                         prefetch_span, const pass_out*);
constexpr pass_fn passes[pass_rows] = {column_pass<1>, column_pass<2>, column_pass<3>,
                                       column_pass<4>, column_pass<5>, column_pass<6>};

//! The k blocks of a region when a thread reads ahead through its blocks: the passes after the
//! first read a region from L1 while they ask for the next, a steady stream (1b bf16's shapes at
//! m = 16, cold, AMD EPYC Zen 5: 0.53-0.67 x the time of whole-K passes asking for the next block
//! into L2; at m = 32, 16 k blocks did better than 8: 0.85 x against 0.90 x). A few rows run
//! through a region so fast that a short one is what keeps the lines asked for arriving in time:
//! `small`'s matmuls (Zen 5, alternating in one process) at 2 blocks instead of 8 took 0.74-0.80 x
//! the time at m = 1, 0.88-0.90 x at m = 2-4, but 1.06 x at m = 6, where 4 blocks took 0.92 x, and
//! 1.37 x at m = 7-16, where the second pass rereads the region from L1; the decode step at batch
//! 1 took 0.81-0.83 x (`small`, `1b`), at 2 0.91 x, at 6 0.96 x, at 16 the same. A prefill
//! chunk's passes, from cache, ran 4-8 % faster over whole K than by regions.
uint32_t region_blocks(uint32_t m) {
  return m <= 4 ? 2 : m <= pass_rows ? 4 : m <= 3 * pass_rows ? 8 : 16;
}

//! Rows [0, m) of one column block, up to 6 at a pass; with `end` (m <= 48), K a region at a time,
//! the passes over a region asking for the lines after it into L1, the next block's too, up to
//! `end`; without, all of K at once, for any m (no sums kept between regions).
void block_passes(const uint16_t* w, uint32_t k_pad, uint32_t cols, const uint16_t* x, uint32_t m,
                  const float* bias, float* y, size_t ldy, const uint16_t* end) {
  assert((!end || m <= item_rows) && "dpbf16: regions keep the sums of at most 48 rows");
  alignas(64) float acc[item_rows * block_cols];
  const uint32_t kb = k_pad / block_k, region = end ? region_blocks(m) : kb,
                 n_passes = (m + pass_rows - 1) / pass_rows;
  for (uint32_t kb0 = 0, kb1 = 0; kb0 < kb; kb0 = kb1) {
    kb1 = std::min(kb, kb0 + region);
    const uint16_t* ahead = w + size_t{kb1} * block_elems;
    const size_t ahead_elems = end ? std::min<size_t>(size_t{kb1 - kb0} * block_elems, end - ahead) : 0;
    const auto lines = static_cast<uint32_t>(ahead_elems * sizeof(uint16_t) / 64);
    for (uint32_t p = 0, i = 0; i < m; ++p) {
      const uint32_t rows = std::min(pass_rows, m - i), first = p * lines / n_passes;
      const pass_out out{bias, y + i * ldy, ldy, cols};
      passes[rows - 1](
          w, kb0, kb1, x + size_t{i} * k_pad, k_pad, end ? acc + size_t{i} * block_cols : nullptr,
          {reinterpret_cast<const char*>(ahead) + size_t{first} * 64, (p + 1) * lines / n_passes - first},
          kb1 == kb ? &out : nullptr);
      i += rows;
    }
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
  const auto block = [&](uint32_t nb, uint32_t r0, uint32_t rows, const uint16_t* end) {
    const uint32_t first = nb * block_cols;
    block_passes(w + size_t{nb} * kb * block_elems, k_pad, std::min(block_cols, n - first),
                 x + size_t{r0} * k_pad, rows, bias ? bias + first : nullptr, y + r0 * ldy + first, ldy, end);
  };
  if (m <= item_rows) {
    // Each thread takes a run of blocks and reads ahead through it a region at a time: the first
    // pass over a region reads it from where the passes before asked for it, the others from L1.
    // At m = 1-4 too, against items of one block each under the guided schedule: 1b bf16's
    // shapes cold at m = 4 took 0.73-0.86 x the time, at m = 1 0.81-1.03 x (Zen 5). A thread
    // done early takes blocks from the end of the other's run: small's matmuls at m = 16 took
    // 0.97 x the time of fixed halves, its batch-1 step 0.93-1.00 x (Zen 5, alternating).
    parallel_runs(blocks, [&](size_t nb, size_t end) {
      block(static_cast<uint32_t>(nb), 0, m, w + end * kb * block_elems);
    });
    return;
  }
  // A prefill chunk: items of a column block and up to 48 rows (8 passes over the block from L2),
  // so that a slice of a few blocks still gives every thread work.
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
