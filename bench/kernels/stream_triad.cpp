#include "bench/kernels/stream_triad.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>

#include "kernels/parallel.hpp"

namespace hearth {
namespace {

// Elements per parallel_for index: large enough that scheduling is noise, small enough that
// two threads share the work evenly on arrays of a few MiB.
constexpr size_t chunk_elems = size_t{1} << 16;

// Runs fn(begin, end) over [0, n) in chunks on the worker's threads. The arrays are first
// touched the same way, so on a NUMA machine each page lives near the thread that streams it.
template <class Fn>
void for_chunks(size_t n, const Fn& fn) {
  const size_t n_chunks = (n + chunk_elems - 1) / chunk_elems;
  parallel_for(n_chunks, [&](size_t c) { fn(c * chunk_elems, std::min(n, (c + 1) * chunk_elems)); });
}

}  // namespace

stream_triad::stream_triad(size_t n) : n_(n) {
  if (n == 0) return;
  a_.reset(new (std::nothrow) double[n]);
  b_.reset(new (std::nothrow) double[n]);
  c_.reset(new (std::nothrow) double[n]);
  if (!a_ || !b_ || !c_) {
    a_.reset();
    return;
  }
  for_chunks(n, [&](size_t lo, size_t hi) {
    std::fill(a_.get() + lo, a_.get() + hi, 0.0);
    std::fill(b_.get() + lo, b_.get() + hi, 1.0);
    std::fill(c_.get() + lo, c_.get() + hi, 2.0);
  });
}

std::vector<double> stream_triad::run(int repetitions) {
  std::vector<double> gbps(static_cast<size_t>(std::max(repetitions, 0)), 0.0);
  if (!a_) return gbps;
  const double s = 3.0;
  double* pa = a_.get();
  const double *pb = b_.get(), *pc = c_.get();
  for (auto& g : gbps) {
    const auto t0 = std::chrono::steady_clock::now();
    for_chunks(n_, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) pa[i] = pb[i] + s * pc[i];
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    g = 24.0 * static_cast<double>(n_) / std::max(seconds, 1e-9) / 1e9;
  }
  // A result that depends on every store, so the loops cannot be dropped.
  if (pa[n_ / 2] != pb[n_ / 2] + s * pc[n_ / 2]) std::fill(gbps.begin(), gbps.end(), 0.0);
  return gbps;
}

double stream_triad_gbps(size_t n, int repetitions) {
  const auto runs = stream_triad(n).run(repetitions);
  return runs.empty() ? 0.0 : *std::max_element(runs.begin(), runs.end());
}

}  // namespace hearth
