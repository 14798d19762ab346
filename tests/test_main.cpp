#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

// The sanitizer build uses clang, whose OpenMP runtime (LLVM's libomp) keeps the thread structures
// of a team that grew (set_kernel_threads(8) in the attention tests) until its own shutdown,
// which comes after LeakSanitizer's check at exit: not our leak. Ignored in other builds.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libomp.so\n";
}
