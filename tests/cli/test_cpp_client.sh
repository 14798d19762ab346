#!/usr/bin/env bash
# The C++ client built as clients/cpp/README.md says, by a project of its own (add_subdirectory
# of clients/cpp alone: tests/cpp_client_consumer), then asking a real `hearth serve`.
# Usage: test_cpp_client.sh PATH/TO/hearth SOURCE_DIR CXX_COMPILER -DCMAKE_CXX_COMPILER_LAUNCHER=...
source "$(dirname "$0")/lib.sh"
hearth=$1 source_dir=$2 cxx=$3 launcher=$4
cmake -S "$source_dir/tests/cpp_client_consumer" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" "$launcher" -DHEARTH_SOURCE_DIR="$source_dir" >"$dir/configure.log" 2>&1 ||
  fail "the consumer project does not configure: $(cat "$dir/configure.log")"
cmake --build "$dir/build" >"$dir/build.log" 2>&1 || fail "the consumer project does not build: $(cat "$dir/build.log")"
"$hearth" model make --preset tiny --dtype f32 --seed 5 -o "$dir/tiny.gguf" >/dev/null
start_serve consumer --model "$dir/tiny.gguf"
out=$("$dir/build/ask" "$endpoint" "Lights off?") || fail "ask failed: $out"
tail -n 1 <<<"$out" | grep -qxE "length|eos" || fail "ask printed no finish reason: $out"
stop_serve "$dir/consumer.err"
echo "the C++ client from a project of its own: all checks passed"
