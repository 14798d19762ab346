#pragma once
// Batch-1 (and 2, 3) matmuls over bf16 weights in oneDNN's blocked layout, with AVX-512 bf16's
// vdpbf16ps. Decode at batch 1 only has to stream the weights at memory speed; oneDNN's brgemm at
// m = 1 ran the `small` model's steps slower than at m = 4 (AMD EPYC Zen 4). Internal to kernels/;
// stateless, and no oneDNN here: the layout is spelled out below, so the kernel is tested against a
// plain reference.
//
// Layout (oneDNN's BA16a64b2a for W (k, n), k the input): blocks of 64 columns, each of blocks of
// 16 k, each 8 k pairs x 64 columns x the pair; so element (k, c) is at
//   ((c / 64) kb + k / 16) 1024 + (k % 16 / 2) 128 + (c % 64) 2 + k % 2,   kb = k_pad / 16.
// k is padded to a multiple of 16 and n to one of 64, the padding zero.

#include <cstddef>
#include <cstdint>

namespace hearth {

//! Whether this CPU has vdpbf16ps (AVX-512 BF16 with F, BW and VL).
bool bf16_gemv_available();

//! y (m, n), rows ldy apart, = x (m, k_pad) bf16, rows k_pad apart, @ W (+ bias (n,) unless null),
//! f32 accumulation: what a bf16 matmul gives, up to summation order. Parallel over the 64-column
//! blocks (parallel_for); up to 3 rows share each pass over W. Only where bf16_gemv_available().
void gemv_bf16_blocked(const uint16_t* w, uint32_t k_pad, uint32_t n, const uint16_t* x, uint32_t m,
                       const float* bias, float* y, size_t ldy);

}  // namespace hearth
