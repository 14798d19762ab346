#pragma once
// The matmul ceiling as this process sees it: what `hearth bench` compares kernels against.

#include <cstdint>

#include "kernels/matmul.hpp"

namespace hearth {

//! GFLOP/s (2 m n_in n_out / median time of one forward) of a random f32-loaded linear on `plan`,
//! on the calling thread's kernel_threads(), timed for about `seconds` after a warm-up.
//! 0 when the linear cannot be created or a size is 0.
double measure_gemm_peak_gflops(uint32_t m, uint32_t n_in, uint32_t n_out, const matmul_plan& plan,
                                double seconds);

}  // namespace hearth
