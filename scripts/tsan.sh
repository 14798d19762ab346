#!/usr/bin/env bash
# The actor tests under ThreadSanitizer (not part of CI: the instrumented build takes long on
# two cores). Workers run one kernel thread here: libgomp is not instrumented, so OpenMP teams
# would only produce false reports.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHEARTH_BUILD_TESTS=ON -DHEARTH_SANITIZE=thread
cmake --build build-tsan -j "$(nproc)" --target test_engine test_engine_core
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/test_engine_core
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/test_engine
