#!/usr/bin/env bash
# The README's first command: install packages, build Release, create the default model if it is
# missing, and serve it (in the foreground, until Ctrl-C). In a second terminal:
#   build/hearth chat
# Arguments go to `hearth serve` (--endpoint ...). HEARTH_QUICKSTART_BUILT=1 skips the packages
# and the build: CTest's first_hour runs this script after the build (tests/cli/test_first_hour.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${HEARTH_QUICKSTART_BUILT:-}" ]; then
  bash scripts/install-deps.sh
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build build
fi

model=models/tiny.gguf
if [ ! -f "$model" ]; then
  mkdir -p models
  ./build/hearth model make --preset tiny --dtype f32 --seed 1 -o "$model"
fi
./build/hearth model info "$model"
./build/hearth generate --model "$model" --prompt "Tell me a story about a hearth." -n 48
echo "In a second terminal, chat with the server:  build/hearth chat"
exec ./build/hearth serve --model "$model" "$@"
