#!/usr/bin/env bash
# The C++ client built as clients/cpp/README.md says, by a project of its own (add_subdirectory
# of clients/cpp alone: tests/cpp_client_consumer) and from its installed files with pkg-config,
# each then asking a real `hearth serve`.
# Usage: test_cpp_client.sh PATH/TO/hearth SOURCE_DIR CXX_COMPILER -DCMAKE_CXX_COMPILER_LAUNCHER=...
#        FLAGS (for the pkg-config build: -fsanitize=... when the installed libraries are sanitized)
source "$(dirname "$0")/lib.sh"
hearth=$1 source_dir=$2 cxx=$3 launcher=$4 flags_extra=$5
cmake -S "$source_dir/tests/cpp_client_consumer" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" "$launcher" -DHEARTH_SOURCE_DIR="$source_dir" >"$dir/configure.log" 2>&1 ||
  fail "the consumer project does not configure: $(cat "$dir/configure.log")"
cmake --build "$dir/build" >"$dir/build.log" 2>&1 || fail "the consumer project does not build: $(cat "$dir/build.log")"
# Installed (cmake --install): the headers, the libraries and hearth-client.pc for pkg-config.
DESTDIR="$dir/root" cmake --install "$(dirname "$hearth")" --prefix /usr >/dev/null
pc=$(find "$dir/root" -name hearth-client.pc)
[ -n "$pc" ] || fail "cmake --install wrote no hearth-client.pc"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs hearth-client) || fail "pkg-config hearth-client failed"
"$cxx" -std=c++20 "$flags_extra" "$source_dir/tests/cpp_client_consumer/ask.cpp" -o "$dir/ask-pc" $flags 2>"$dir/pc.log" ||
  fail "ask.cpp does not build with pkg-config's flags ($flags): $(cat "$dir/pc.log")"

"$hearth" model make --preset tiny --dtype f32 --seed 5 -o "$dir/tiny.gguf" >/dev/null
start_serve consumer --model "$dir/tiny.gguf"
for ask in "$dir/build/ask" "$dir/ask-pc"; do
  out=$("$ask" "$endpoint" "Lights off?") || fail "$ask failed: $out"
  tail -n 1 <<<"$out" | grep -qxE "length|eos" || fail "$ask printed no finish reason: $out"
done
stop_serve "$dir/consumer.err"
echo "the C++ client from a project of its own: all checks passed"
