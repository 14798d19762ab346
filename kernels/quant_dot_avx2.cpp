// The quantized dot kernels for AVX2 + FMA (this file is built with -mavx2 -mfma -mf16c).
#include "kernels/quant_dot.hpp"

#define HEARTH_QUANT_NS avx2
#include "kernels/quant_kernels.inc"
