#pragma once
// The machine's streaming memory bandwidth as this worker sees it: the ceiling that decode
// (weights and KV read once per step) is compared against.

#include <cstddef>
#include <memory>
#include <vector>

namespace hearth {

//! The STREAM triad a[i] = b[i] + s c[i] over three double arrays of `n` elements each (24 bytes
//! counted per element), split in chunks over parallel_for on the calling thread's
//! kernel_threads(). The arrays are allocated and touched once, so that a bench can time the
//! triad beside each of its own measurements (the machine's bandwidth drifts over a run) and
//! know how much of its resident memory they are.
class stream_triad {
 public:
  //! No arrays (every run 0) when n is 0 or they cannot be had.
  explicit stream_triad(size_t n);

  //! GB/s of each of `repetitions` runs, in order; 0s without arrays.
  std::vector<double> run(int repetitions);
  size_t bytes() const { return a_ ? 24 * n_ : 0; }

 private:
  size_t n_;
  std::unique_ptr<double[]> a_, b_, c_;
};

//! Best-of-`repetitions` GB/s of a stream_triad of `n` elements: 0 when n or repetitions is 0 or
//! the arrays cannot be had.
double stream_triad_gbps(size_t n, int repetitions);

}  // namespace hearth
