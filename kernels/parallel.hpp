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

//! Runs fn(i) for i in [0, n) on the worker's threads; iterations are independent.
void parallel_for(size_t n, const std::function<void(size_t)>& fn);

}  // namespace hearth
