#include <catch2/catch.hpp>

#include <cmath>

#include "bench/kernels/stream_triad.hpp"
#include "kernel_threads_scope.hpp"
#include "kernels/parallel.hpp"

using namespace hearth;

TEST_CASE("stream triad reports a positive finite bandwidth on a small size", "[bench]") {
  const test::kernel_threads_scope restore_threads;
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    set_kernel_threads(threads);
    // 3 x 2 MiB, several chunks per thread: milliseconds even under the sanitizers.
    const double gbps = stream_triad_gbps(size_t{1} << 18, 3);
    CHECK(std::isfinite(gbps));
    CHECK(gbps > 0.0);
  }
}

TEST_CASE("stream triad of nothing is 0", "[bench]") {
  CHECK(stream_triad_gbps(0, 3) == 0.0);
  CHECK(stream_triad_gbps(1000, 0) == 0.0);
}
