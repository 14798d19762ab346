#pragma once
// How our own kernels use the worker's cores. Every parallel loop in kernels/ goes through here,
// so the threading runtime is one decision in one place (see docs/architecture.md, "Threads").

#include <cstddef>
#include <functional>

namespace hearth {

//! Threads our kernels and oneDNN may use on the calling (worker) thread; call once on that
//! thread, after pinning it and before its first kernel.
void set_kernel_threads(int n);
int kernel_threads();

//! How parallel_for hands out its iterations to the threads.
enum class schedule {
  //! Dynamic chunks of about an eighth of a thread's share, so that uneven iterations (attention
  //! over sequences of different lengths) balance and long elementwise loops pay few atomics.
  uneven,
  //! Iterations of equal cost that read memory in order (a matrix's rows): guided chunks, from
  //! half the iterations down to a sixteenth of a thread's share, so that each thread reads long
  //! runs while the small last chunks still end the threads together.
  streaming,
};

//! Runs fn(i) for i in [0, n) on the worker's threads; iterations are independent.
void parallel_for(size_t n, const std::function<void(size_t)>& fn, schedule s = schedule::uneven);

//! Runs fn(i, end) for i in [0, n) on the worker's threads, each thread through its own run of
//! [0, n) in order, `end` that run's end (how far it may read ahead); a thread done with its run
//! takes the others' last iterations, one at a time (end = i + 1), so that threads slowed by the
//! machine still end together. For iterations that stream memory in order, in long runs.
void parallel_runs(size_t n, const std::function<void(size_t, size_t)>& fn);

}  // namespace hearth
