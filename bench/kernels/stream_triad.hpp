#pragma once
// The machine's streaming memory bandwidth as this worker sees it: the ceiling that decode
// (weights and KV read once per step) is compared against.

#include <cstddef>

namespace hearth {

//! Best-of-`repetitions` GB/s of the STREAM triad a[i] = b[i] + s c[i] over three double arrays
//! of `n` elements each (24 bytes counted per element), split in chunks over parallel_for on the
//! calling thread's kernel_threads(). 0 when n or repetitions is 0 or the arrays cannot be had.
double stream_triad_gbps(size_t n, int repetitions);

}  // namespace hearth
