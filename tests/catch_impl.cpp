// Catch2's implementation (a runner, no main), compiled once for every test executable: each
// compile of it took ~15-21 s of one core. The mains are test_main.cpp and
// cuda/cuda_test_main.cpp (tests/catch_main.cmake).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_run.hpp"

int hearth::test::run_catch(int argc, char** argv) {
  return Catch::Session().run(argc, argv);
}
