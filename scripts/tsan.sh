#!/usr/bin/env bash
# The actor tests under ThreadSanitizer (not part of CI: the instrumented builds take long on two
# cores). TSan has to see every synchronisation, and Debian's libcaf_core is not instrumented: each
# message one thread hands to an actor looked like a race inside CAF. So this builds CAF itself
# with TSan once, into build-tsan/caf (the version Debian ships, from Debian's archive, checksum
# checked; about 3 minutes), and links the tests against it. Kernels run one thread: libgomp is
# not instrumented either, so OpenMP teams would only produce false reports.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
caf=$root/build-tsan/caf
caf_src=$caf/actor-framework-0.17.6
caf_tar=actor-framework_0.17.6.orig.tar.gz
caf_sha256=e2bf5bd243f08bb7d8adde197cfe3e6d71314ed3378fe0692f8932f4c3b3928c

if [ ! -f "$caf/build/lib/libcaf_core.so" ]; then
  mkdir -p "$caf"
  curl -fsSL -o "$caf/$caf_tar" "http://deb.debian.org/debian/pool/main/a/actor-framework/$caf_tar"
  echo "$caf_sha256  $caf/$caf_tar" | sha256sum -c --quiet
  tar xzf "$caf/$caf_tar" -C "$caf"
  cmake -S "$caf_src" -B "$caf/build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1 -g1 -fsanitize=thread -w" \
    -DCAF_NO_IO=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_EXAMPLES=yes -DCAF_NO_OPENCL=yes -DCAF_NO_OPENSSL=yes \
    -DCAF_NO_PYTHON=yes -DCAF_NO_TOOLS=yes -DCAF_NO_SUMMARY=yes -DCAF_NO_COMPILER_CHECK=yes >/dev/null
  cmake --build "$caf/build" -j "$(nproc)" >/dev/null
fi

# CAF's headers from the same source, and the build_config.hpp its build generated.
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHEARTH_BUILD_TESTS=ON -DHEARTH_SANITIZE=thread \
  -DCAF_CORE_LIBRARY="$caf/build/lib/libcaf_core.so" -DCAF_INCLUDE_DIR="$caf_src/libcaf_core;$caf/build/libcaf_core"
cmake --build build-tsan -j "$(nproc)" --target test_engine test_engine_core
export LD_LIBRARY_PATH=$caf/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMP_NUM_THREADS=1  # the backend the scheduler tests compare against, too
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
build-tsan/tests/test_engine_core
build-tsan/tests/test_engine
