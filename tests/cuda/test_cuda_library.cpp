// What of the CUDA backend runs without a device: cuBLASLt, which the backend opens at run time
// rather than links (kernels/cuda/cuda_gemm.cpp), is found and has every function it calls.
#include <catch2/catch.hpp>

#include "kernels/cuda/cuda_gemm.hpp"

TEST_CASE("cuBLASLt is opened at run time, with every function the products call", "[cuda_library]") {
  const auto st = hearth::cuda::gemm::open_library();
  INFO((st ? std::string("opened") : st.error().message));
  CHECK(st.ok());
  CHECK(hearth::cuda::gemm::open_library().ok());  // once, then remembered
}
