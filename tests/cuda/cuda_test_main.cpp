// The CUDA tests' main: without a device every test is skipped (exit 77, CTest's SKIP_RETURN_CODE)
// after saying why, so that a machine without a GPU never reports GPU code as tested. With
// HEARTH_REQUIRE_GPU=1 (scripts/gpu-check.sh) no device is a failure: a GPU machine whose driver is
// too old for the runtime must not pass by skipping. Listing the tests (CTest's discovery at build
// time) needs no device.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "catch_run.hpp"
#include "kernels/cuda/cuda_backend.hpp"

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::string_view(argv[i]).starts_with("--list");
  std::string why;
  if (!listing && hearth::cuda_backend::device_count(&why) == 0) {
    const char* require = std::getenv("HEARTH_REQUIRE_GPU");
    const bool required = require && std::string_view(require) == "1";
    std::printf("%s: no CUDA device (%s)\n", required ? "failed" : "skipped", why.c_str());
    return required ? 1 : 77;
  }
  return hearth::test::run_catch(argc, argv);
}
