#!/usr/bin/env bash
# The GPU check, in one run on a GPU machine that has CUDA, CMake and ninja but none of our Debian
# libraries (docs/cuda.md): builds the CUDA backend alone (HEARTH_GPU_CHECK), runs its tests, the
# same tests under compute-sanitizer's memcheck, and the kernels bench on a generated `1b`. Every
# result goes to files in $OUT (default ./gpu-check-out), summary.txt first. The stages' limits
# add up to under the device's 10 minutes a command (about 3 minutes is the expected whole).
# Needs .gpu-deps/ (scripts/gpu-deps.sh, run where apt works) carried along.
#
#   device run:  bash scripts/gpu-check.sh          (carry: .gpu-deps)
#   options:     GPU_CHECK_QUICK=1 for a bench of seconds; GPU_CHECK_PRESET=small for a smaller model
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-check-out}
mkdir -p "$out"
preset=${GPU_CHECK_PRESET:-1b}
quick=${GPU_CHECK_QUICK:+--quick}
jobs=$(nproc)
# Each line of the summary is written as it is known: a run cut at the device's limit still
# brings back what it reached.
: >"$out/summary.txt"
note() { echo "gpu-check: $1" | tee -a "$out/summary.txt"; }

{ nvidia-smi; nvcc --version; cmake --version; g++ --version; } >"$out/machine.txt" 2>&1
[[ -d .gpu-deps/usr ]] || { note "no .gpu-deps: run scripts/gpu-deps.sh here first and carry .gpu-deps"; exit 2; }

t0=$SECONDS
if cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEARTH_GPU_CHECK=ON \
     -DCMAKE_PREFIX_PATH="$PWD/.gpu-deps/usr" >"$out/build.log" 2>&1 &&
   timeout 200 cmake --build build-gpu -j"$jobs" >>"$out/build.log" 2>&1; then
  note "build: ok in $((SECONDS - t0)) s"
else
  note "build: FAILED (build.log)"
  tail -40 "$out/build.log"
  exit 1
fi

t0=$SECONDS
# No device is a failure here, not a skip (tests/cuda/cuda_test_main.cpp).
HEARTH_REQUIRE_GPU=1 timeout 120 ctest --test-dir build-gpu -L cuda -j4 --output-on-failure \
  --output-junit "$out/tests.xml" >"$out/tests.log" 2>&1
rc=$?
note "tests: rc $rc in $((SECONDS - t0)) s: $(grep -E 'tests passed|tests failed' "$out/tests.log" | tail -1)"
grep -q "Skipped" "$out/tests.log" && note "tests: SKIPPED tests (tests.log): none may be on a GPU machine"
[[ $rc -ne 0 ]] && grep -E "Failed|\*\*\*|FAILED|REQUIRE|CHECK" "$out/tests.log" | head -40

t0=$SECONDS
if command -v compute-sanitizer >/dev/null; then
  HEARTH_REQUIRE_GPU=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/tests/cuda/test_cuda_backend \
    >"$out/memcheck.log" 2>&1
  rc=$?
  note "memcheck: rc $rc in $((SECONDS - t0)) s: $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1)"
else
  note "memcheck: no compute-sanitizer on this machine"
fi

t0=$SECONDS
(cd "$out" && timeout 150 "$OLDPWD/build-gpu/bench/cuda/hearth-cuda-bench" --preset "$preset" $quick \
   --json bench.json >bench.txt 2>&1)
rc=$?
rm -f "$out"/*.gguf
note "bench ($preset): rc $rc in $((SECONDS - t0)) s"
cat "$out/bench.txt"
