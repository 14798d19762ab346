// The quantized dot kernels for AVX-512 VNNI on 256-bit vectors (built with -mavx512vnni
// -mavx512vl and the rest of x86-64-v4): vpdpbusd in place of vpmaddubsw + vpmaddwd.
#include "kernels/quant_dot.hpp"

#define HEARTH_QUANT_NS vnni
#include "kernels/quant_kernels.inc"
