#!/usr/bin/env bash
# End-to-end checks of the `hearth` executable: make a model, describe it, generate from it, and
# fail with one line and exit code 1 on bad input. Usage: test_cli.sh PATH/TO/hearth
source "$(dirname "$0")/lib.sh"
hearth=$1

"$hearth" model make --preset tiny --dtype q8_0 --seed 3 -o "$dir/tiny.gguf" >/dev/null
info=$("$hearth" model info "$dir/tiny.gguf")
grep -q "parameters     24.41 M" <<<"$info" || fail "model info: $info"
grep -q "f32 13 q8_0 44" <<<"$info" || fail "model info types: $info"
grep -q "chat template  llama3" <<<"$info" || fail "model info template: $info"

# Greedy generation is deterministic; a seeded sampled one too.
a=$("$hearth" generate -m "$dir/tiny.gguf" -p "The kettle" -n 12 --temperature 0 2>/dev/null)
b=$("$hearth" generate -m "$dir/tiny.gguf" -p "The kettle" -n 12 --temperature 0 2>/dev/null)
[ "$a" = "$b" ] && [ -n "$a" ] || fail "greedy generation differs: '$a' vs '$b'"
a=$("$hearth" generate -m "$dir/tiny.gguf" -p "Hello" -n 12 --seed 9 --chat 2>/dev/null)
b=$("$hearth" generate -m "$dir/tiny.gguf" -p "Hello" -n 12 --seed 9 --chat 2>/dev/null)
[ "$a" = "$b" ] || fail "seeded generation differs"
stats=$("$hearth" generate -m "$dir/tiny.gguf" -p "Hi" -n 4 2>&1 >/dev/null)
grep -q "TTFT" <<<"$stats" || fail "generate prints no timings: $stats"

# cuBLASLt is opened by the CUDA backend when it runs, never linked: linked, it costs every
# process ~210 MiB of resident memory.
if readelf -d "$hearth" | grep -q 'NEEDED.*libcublas'; then fail "hearth links cuBLAS"; fi

# Bad input: exit code 1 and exactly one line naming the problem.
printf 'GGUF\003\000\000\000' >"$dir/short.gguf"
expect_one_line_error "truncated file" "truncated" "$hearth" model info "$dir/short.gguf"
expect_one_line_error "missing file" "io" "$hearth" model info "$dir/none.gguf"
head -c 4096 /dev/urandom >"$dir/noise.gguf"
expect_one_line_error "not GGUF" "bad_magic" "$hearth" model info "$dir/noise.gguf"
expect_one_line_error "bad sampling" "top_p" "$hearth" generate -m "$dir/tiny.gguf" -p x --top-p 1.5
# A backend this machine cannot run is refused at start, naming it: `cuda` without a GPU (or in a
# build without the CUDA backend: "no CUDA backend"); the machines these tests run on have none.
printf '[engine]\nbackend = "cuda"\n' >"$dir/cuda.toml"
expect_one_line_error "cuda without a device" "cuda backend: no device\|no CUDA backend" \
  "$hearth" serve -m "$dir/tiny.gguf" --config "$dir/cuda.toml" --endpoint "ipc://$dir/cuda.sock"
# An exception no command expects ends the same way, not in std::terminate: the standard
# library's filesystem_error, from `serve` checking its default model (models/tiny.gguf) in a
# folder whose `models` is a symbolic link to itself.
mkdir "$dir/loop"
ln -s models "$dir/loop/models"
hearth_path=$(realpath "$hearth")
(cd "$dir/loop" && expect_one_line_error "an escaping exception" "models/tiny.gguf" "$hearth_path" serve)
# Long work shows progress: plain lines at tenths into a pipe, one line rewritten in place on a
# terminal (`script` gives the command a pty); a small q4_0 file takes more than the quiet second.
"$hearth" model make --preset small --dtype q4_0 --seed 2 -o "$dir/small.gguf" 2>"$dir/make.err" >/dev/null
lines=$(grep -c "^writing $dir/small.gguf: [0-9]* %" "$dir/make.err" || true)
[ "$lines" -ge 1 ] && [ "$lines" -le 11 ] && tail -1 "$dir/make.err" | grep -q "^writing .*: done in " ||
  fail "model make's progress into a pipe: $(cat "$dir/make.err")"
script -qec "'$hearth' model make --preset small --dtype q4_0 --seed 2 -o '$dir/small2.gguf'" /dev/null >"$dir/make.tty"
grep -q $'\r'"writing $dir/small2.gguf: .* % .* left" "$dir/make.tty" && [ "$(grep -c "writing" "$dir/make.tty")" -eq 1 ] ||
  fail "model make's progress on a terminal: $(od -c "$dir/make.tty" | head)"
cmp -s "$dir/small.gguf" "$dir/small2.gguf" || fail "the same seed wrote two different files"
echo "cli: all checks passed"
