#include "kernels/parallel.hpp"

#include <algorithm>

#include <omp.h>

// One runtime: OpenMP. Debian's oneDNN runs its matmuls on the calling thread's libgomp team, so
// our loops run on that same team: a worker given N cores has N threads, busy either in a matmul
// or in one of our kernels, never both. A oneTBB arena beside it would add N more threads while
// libgomp's spin-waiting team still holds the cores after each matmul (docs/threads.md measures it).

namespace hearth {
namespace {
thread_local int t_threads = 0;  // 0: not set on this thread, OpenMP's default applies
}  // namespace

void set_kernel_threads(int n) {
  t_threads = std::max(1, n);
  omp_set_num_threads(t_threads);  // per calling thread: this worker's team, and oneDNN's
}

int kernel_threads() {
  return t_threads > 0 ? t_threads : omp_get_max_threads();
}

void parallel_for(size_t n, const std::function<void(size_t)>& fn, schedule s) {
  const int threads = static_cast<int>(std::min<size_t>(n, static_cast<size_t>(kernel_threads())));
  if (threads <= 1 || omp_in_parallel()) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  // Streaming: each chunk a thread takes starts a new run of reads, which the hardware prefetchers
  // must find again (AMD EPYC Zen 5, two threads reading 576 MiB: 27-31 GB/s in 34 KiB chunks dealt
  // one at a time, 47-53 in long runs). Guided chunks against dynamic ones of an eighth of a
  // thread's share: `1b` q4_k_m batch 1 14.6-14.7 against 17.9 ms a step (`bench kernels`, the
  // same triad), q8_0 22.3-22.7 against 23.5-23.9.
  if (s == schedule::streaming) {
    const size_t smallest = std::max<size_t>(1, n / (static_cast<size_t>(threads) * 16));
#pragma omp parallel for num_threads(threads) schedule(guided, smallest)
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  const size_t chunk = std::max<size_t>(1, n / (static_cast<size_t>(threads) * 8));
#pragma omp parallel for num_threads(threads) schedule(dynamic, chunk)
  for (size_t i = 0; i < n; ++i) fn(i);
}

}  // namespace hearth
