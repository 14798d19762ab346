#pragma once
// For a test that changes the kernels' thread count: the count it found comes back when the test
// ends, a failed REQUIRE included, so that the binary's later tests run on the threads they expect.
#include "kernels/parallel.hpp"

namespace hearth::test {

class kernel_threads_scope {
 public:
  kernel_threads_scope() : before_(kernel_threads()) {}
  explicit kernel_threads_scope(int threads) : kernel_threads_scope() { set_kernel_threads(threads); }
  ~kernel_threads_scope() { set_kernel_threads(before_); }
  kernel_threads_scope(const kernel_threads_scope&) = delete;
  kernel_threads_scope& operator=(const kernel_threads_scope&) = delete;

 private:
  int before_;
};

}  // namespace hearth::test
