#!/usr/bin/env bash
# The actor and gateway tests under ThreadSanitizer (not part of CI: the instrumented builds take
# long on two cores). TSan has to see every synchronisation, and Debian's libcaf_core and libzmq
# are not instrumented: every message one thread handed to an actor, and every frame libzmq's I/O
# thread handed to a socket's owner, looked like a race. So this builds both from Debian's own
# source archive (the versions Debian ships, checksums checked) with TSan, once, into
# build-tsan/deps (about 4 minutes), and links the tests against them. Kernels run one thread:
# libgomp is not instrumented either, so OpenMP teams would only produce false reports.
set -euo pipefail
cd "$(dirname "$0")/.."
deps=$PWD/build-tsan/deps
flags="-O1 -g1 -fsanitize=thread -w"

# tsan_dep NAME POOL_PATH SHA256 SOURCE_DIR [CMAKE OPTIONS...]: Debian's source tarball of NAME,
# built with TSan and installed into $deps/NAME.
tsan_dep() {
  local name=$1 pool_path=$2 sha256=$3 src=$4
  shift 4
  local dir=$deps/$name tar=${pool_path##*/}
  [ -f "$dir/install/.done" ] && return
  mkdir -p "$dir"
  curl -fsSL -o "$dir/$tar" "http://deb.debian.org/debian/pool/main/$pool_path"
  echo "$sha256  $dir/$tar" | sha256sum -c --quiet
  tar xzf "$dir/$tar" -C "$dir"
  cmake -S "$dir/$src" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_INSTALL_PREFIX="$dir/install" "$@" >/dev/null
  cmake --build "$dir/build" -j "$(nproc)" >/dev/null
  cmake --install "$dir/build" >/dev/null
  touch "$dir/install/.done"
}

tsan_dep caf a/actor-framework/actor-framework_0.17.6.orig.tar.gz \
  e2bf5bd243f08bb7d8adde197cfe3e6d71314ed3378fe0692f8932f4c3b3928c actor-framework-0.17.6 \
  -DCAF_NO_IO=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_EXAMPLES=yes -DCAF_NO_OPENCL=yes -DCAF_NO_OPENSSL=yes \
  -DCAF_NO_PYTHON=yes -DCAF_NO_TOOLS=yes -DCAF_NO_SUMMARY=yes -DCAF_NO_COMPILER_CHECK=yes
# CURVE by libzmq's bundled tweetnacl where Debian's uses libsodium: the same keys and handshake.
tsan_dep zmq z/zeromq3/zeromq3_4.3.4.orig.tar.gz \
  0ff5a531c9ffaf0dfdc7dc78d13d1383088f454896d252934c429b2554d10559 libzmq-4.3.4 \
  -DWITH_LIBSODIUM=OFF -DENABLE_CURVE=ON -DBUILD_TESTS=OFF -DBUILD_STATIC=OFF -DWITH_DOCS=OFF \
  -DWITH_PERF_TOOL=OFF -DENABLE_DRAFTS=OFF

cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHEARTH_BUILD_TESTS=ON -DHEARTH_SANITIZE=thread \
  -DCAF_INCLUDE_DIR="$deps/caf/install/include" -DCAF_CORE_LIBRARY="$deps/caf/install/lib/libcaf_core.so" \
  -DZeroMQ_DIR="$deps/zmq/install/lib/cmake/ZeroMQ"
cmake --build build-tsan -j "$(nproc)" --target test_engine test_engine_core test_gateway gateway_test_client
export LD_LIBRARY_PATH=$deps/caf/install/lib:$deps/zmq/install/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMP_NUM_THREADS=1  # the backend the scheduler tests compare against, too
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
cd build-tsan/tests  # where CTest runs them: test_gateway starts ./gateway_test_client
./test_engine_core
./test_engine
./test_gateway
