// The CUDA tests' main: without a device every test is skipped (exit 77, CTest's SKIP_RETURN_CODE)
// after saying why, so that a machine without a GPU never reports GPU code as tested. Listing the
// tests (CTest's discovery at build time) needs no device.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <string_view>

#include "kernels/cuda/cuda_backend.hpp"

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::string_view(argv[i]).starts_with("--list");
  std::string why;
  if (!listing && hearth::cuda_backend::device_count(&why) == 0) {
    std::printf("skipped: no CUDA device (%s)\n", why.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
