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

double stream_triad_gbps(size_t n, int repetitions) {
  if (n == 0 || repetitions <= 0) return 0.0;
  std::unique_ptr<double[]> a(new (std::nothrow) double[n]), b(new (std::nothrow) double[n]),
      c(new (std::nothrow) double[n]);
  if (!a || !b || !c) return 0.0;
  for_chunks(n, [&](size_t lo, size_t hi) {
    std::fill(a.get() + lo, a.get() + hi, 0.0);
    std::fill(b.get() + lo, b.get() + hi, 1.0);
    std::fill(c.get() + lo, c.get() + hi, 2.0);
  });
  const double s = 3.0;
  double* pa = a.get();
  const double *pb = b.get(), *pc = c.get();
  double best = 0.0;
  for (int rep = 0; rep < repetitions; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for_chunks(n, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) pa[i] = pb[i] + s * pc[i];
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 24.0 * static_cast<double>(n) / std::max(seconds, 1e-9) / 1e9);
  }
  // A result that depends on every store, so the loops cannot be dropped.
  return a[n / 2] == b[n / 2] + s * c[n / 2] ? best : 0.0;
}

}  // namespace hearth
