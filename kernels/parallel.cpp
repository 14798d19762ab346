#include "kernels/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <vector>

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

void parallel_runs(size_t n, const std::function<void(size_t, size_t)>& fn) {
  const auto threads = static_cast<uint32_t>(std::min<size_t>(n, static_cast<size_t>(kernel_threads())));
  if (threads <= 1 || omp_in_parallel()) {
    for (size_t i = 0; i < n; ++i) fn(i, n);
    return;
  }
  // A run's next iteration from the front (its owner's) and from the back (the others'), packed in
  // one word so that both ends move by one compare-and-swap and never pass each other.
  struct alignas(64) run {
    std::atomic<uint64_t> ends;
  };
  assert(n < (uint64_t{1} << 32) && "parallel_runs: iterations fit 32 bits");
  std::vector<run> runs(threads);
  const auto bound = [&](uint32_t t) { return n * t / threads; };
  for (uint32_t t = 0; t < threads; ++t) runs[t].ends.store(bound(t) | (uint64_t{bound(t + 1)} << 32));
  // The next iteration of run t from its front or back; none once the ends meet.
  const auto take = [&](uint32_t t, bool front, size_t& i) {
    uint64_t e = runs[t].ends.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t f = e & 0xffffffffu, b = e >> 32;
      if (f >= b) return false;
      const uint64_t next = front ? e + 1 : e - (uint64_t{1} << 32);
      if (runs[t].ends.compare_exchange_weak(e, next, std::memory_order_relaxed)) {
        i = front ? f : b - 1;
        return true;
      }
    }
  };
  const int team = static_cast<int>(threads);
#pragma omp parallel num_threads(team)
  {
    const auto t = static_cast<uint32_t>(omp_get_thread_num());
    for (size_t i; take(t, true, i);) fn(i, bound(t + 1));
    for (uint32_t o = 1; o < threads; ++o)
      for (size_t i; take((t + o) % threads, false, i);) fn(i, i + 1);
  }
}

}  // namespace hearth
