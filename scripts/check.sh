#!/usr/bin/env bash
# The README's second command, and what CI runs: install packages, build with tests, run them
# through CTest; then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer. The
# suite replays each fuzz harness over fixed inputs; coverage-guided fuzzing is scripts/fuzz.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

bash scripts/install-deps.sh

echo "== tests (Release)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEARTH_BUILD_TESTS=ON
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
# Debug keeps the asserts and builds at -O0, but for kernels and model at -O1 (CMakeLists.txt).
# -g1 (line tables, enough for the sanitizers' stack traces) compiles and links much faster
# than full debug information on two cores. Clang, not GCC: GCC 12 took 805 CPU-seconds for
# this build and clang 14 about 460 (its sanitizer instrumentation is cheaper to compile), and a
# second compiler's warnings come with it. Its OpenMP runtime is LLVM's libomp, which then also
# serves oneDNN's libgomp calls (docs/threads.md).
cmake -S . -B build-asan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DHEARTH_BUILD_TESTS=ON -DHEARTH_SANITIZE=address,undefined
cmake --build build-asan -j "$jobs"
# Without the checks of the tree and the package (label `tree`): no sanitizer changes them. On
# the kernel plans the Release run timed (the same CPU and thread counts): instrumented kernels'
# timings say nothing of their speed, and timing them was most of a model test's time in a fresh
# build (the backend's reference test 7.0 s, 2.7 s on cached plans).
HEARTH_KERNEL_CACHE="$PWD/build/kernel-plans.tsv" ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE tree
