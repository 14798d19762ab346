#include <cstdlib>

#include "catch_run.hpp"

// The kernel tuner's plans (kernels/kernel_tuner.hpp) are cached in the build's own file, never
// the user's: set before main, and before any test loads a model.
static const bool kernel_cache_set = [] {
  return setenv("HEARTH_KERNEL_CACHE", HEARTH_TEST_KERNEL_CACHE, 0) == 0;
}();

int main(int argc, char** argv) {
  return hearth::test::run_catch(argc, argv);
}
