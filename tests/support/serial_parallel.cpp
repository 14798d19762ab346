// A serial stand-in for kernels/parallel.hpp, linked only into kernel tests and benchmarks until
// the threaded implementation is in the tree: parallel_for runs the iterations in order.
#include "kernels/parallel.hpp"

namespace hearth {

namespace {
thread_local int threads = 1;
}

void set_kernel_threads(int n) {
  threads = n > 0 ? n : 1;
}
int kernel_threads() {
  return threads;
}

void parallel_for(size_t n, const std::function<void(size_t)>& fn) {
  for (size_t i = 0; i < n; ++i) fn(i);
}

}  // namespace hearth
