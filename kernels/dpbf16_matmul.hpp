#pragma once
// Decode-sized matmuls (m < 64) over bf16 weights in oneDNN's blocked layout, with AVX-512 bf16's
// vdpbf16ps. Decode reads every weight from memory each step, and what it needs is a kernel that
// streams them at memory speed while it computes: oneDNN's brgemm read `1b`'s weights at 19 / 21 /
// 13 GB/s at m = 1 / 4 / 16 where this kernel read 31 / 31 / 16 (AMD EPYC Zen 4, a ~26 GB/s triad).
// Internal to kernels/; stateless, and no oneDNN here: the layout is spelled out below, so the
// kernel is tested against a plain reference.
//
// Layout (oneDNN's BA16a64b2a for W (k, n), k the input): blocks of 64 columns, each of blocks of
// 16 k, each 8 k pairs x 64 columns x the pair; so element (k, c) is at
//   ((c / 64) kb + k / 16) 1024 + (k % 16 / 2) 128 + (c % 64) 2 + k % 2,   kb = k_pad / 16.
// k is padded to a multiple of 16 and n to one of 64, the padding zero.

#include <cstddef>
#include <cstdint>

namespace hearth {

//! Whether this CPU has vdpbf16ps (AVX-512 BF16 with F, BW and VL).
bool dpbf16_available();

//! Rows [n0, n0 + rows) of W, their k in [k0, k0 + n_k): v (rows, n_k) f32, rows ldv apart,
//! rounded to bf16 (nearest even), as columns n0.. of a slice (n_in, N) in the layout above; n0 a
//! multiple of 16, k0, n_k and n_in of 32. A group of fewer than 16 rows zeroes the rest of its 16
//! columns. Only where dpbf16_available().
void dpbf16_pack_rows(const float* v, size_t ldv, uint32_t rows, uint32_t k0, uint32_t n_k, uint32_t n_in,
                      uint32_t n0, uint16_t* slice);

//! y (m, n), rows ldy apart, = x (m, k_pad) bf16, rows k_pad apart, @ W (+ bias (n,) unless null),
//! f32 accumulation: what a bf16 matmul gives, up to summation order. Parallel over the 64-column
//! blocks and groups of 48 rows (parallel_for); each block is read from memory once, for up to 6
//! rows of x, and from cache for the next 6. Up to 48 rows each thread takes a run of blocks and
//! works through each a region of K at a time: the first pass over a region reads it, the others
//! from L1, while all of them ask for the next region (1b bf16's batch-16 decode step on an AMD
//! EPYC Zen 5, 95-115 -> 62-80 ms against whole-K passes from L2, alternating runs). Only where
//! dpbf16_available().
void dpbf16_matmul(const uint16_t* w, uint32_t k_pad, uint32_t n, const uint16_t* x, uint32_t m,
                   const float* bias, float* y, size_t ldy);

//! Columns in one block of the layout: what dpbf16_matmul_block multiplies.
inline constexpr uint32_t dpbf16_block_cols = 64;

//! dpbf16_matmul's work on one column block, on the calling thread: y (m, cols) = x @ the block's
//! columns (+ bias (cols,) unless null), w the block (k_pad x 64 in the layout), cols <= 64.
void dpbf16_matmul_block(const uint16_t* w, uint32_t k_pad, uint32_t cols, const uint16_t* x, uint32_t m,
                         const float* bias, float* y, size_t ldy);

}  // namespace hearth
