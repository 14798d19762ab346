#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cstdlib>

// The kernel tuner's plans (kernels/kernel_tuner.hpp) are cached in the build's own file, never
// the user's: set before main, and before any test loads a model.
static const bool kernel_cache_set = [] {
  return setenv("HEARTH_KERNEL_CACHE", HEARTH_TEST_KERNEL_CACHE, 0) == 0;
}();
