#!/usr/bin/env bash
# `hearth model tokenize` on the SPM fixture model (no lone "▁" piece, byte fallback), against ids
# llama.cpp gave for the same file (test_tokenizer_llama_cpp.cpp). Usage: test_tokenize.sh
# PATH/TO/hearth PATH/TO/tokenizer_fixture_model
source "$(dirname "$0")/lib.sh"
hearth=$1
fixture_model=$2

"$fixture_model" "$dir/spm.gguf"

ids_of() { "$hearth" model tokenize "$@" | awk '{print $1}' | paste -sd' '; }

# The two spaces: "▁Hello", then a "▁" the vocabulary lacks as its three bytes, then "▁world".
got=$(ids_of "$dir/spm.gguf" "Hello  world")
[ "$got" = "1 574 229 153 132 568" ] || fail "Hello  world: $got"
out=$("$hearth" model tokenize "$dir/spm.gguf" "Hello  world")
grep -q "^   574 -> ' Hello'$" <<<"$out" || fail "piece of ▁Hello: $out"
grep -q "^   229 -> '\\\\xE2'  byte <0xE2>$" <<<"$out" || fail "byte piece: $out"

got=$(ids_of --no-bos "$dir/spm.gguf" "Hello")
[ "$got" = "574" ] || fail "--no-bos: $got"
# Control-token text is text unless --special; user-defined tokens (<think>) are matched either way.
got=$(ids_of "$dir/spm.gguf" "<s>Hello</s>")
[ "$got" = "1 229 153 132 611 666 613 623 652 402 611 598 666 613" ] || fail "specials as text: $got"
got=$(ids_of --special "$dir/spm.gguf" "<s>Hello</s>")
[ "$got" = "1 1 574 2" ] || fail "--special: $got"
got=$(ids_of "$dir/spm.gguf" "<think>thinking</think> answer")
[ "$got" = "1 703 329 285 658 393 704 229 153 132 331 666 670 287" ] || fail "user-defined: $got"
got=$(ids_of "$dir/spm.gguf" "")
[ "$got" = "1" ] || fail "empty text: $got"
# Text that looks like an option, after -- (ids from llama-tokenize too).
got=$(ids_of "$dir/spm.gguf" -- "--x")
[ "$got" = "1 320 596 671" ] || fail "text after --: $got"

json=$("$hearth" model tokenize --json "$dir/spm.gguf" "Hello  world")
grep -q '^{"n_tokens":6,"tokens":\[{"id":1,"piece":"<s>","token":"<s>","type":"control"},' <<<"$json" ||
  fail "json: $json"
grep -q '{"id":574,"piece":" Hello","token":"▁Hello","type":"normal"}' <<<"$json" || fail "json piece: $json"

expect_one_line_error "missing file" "io" "$hearth" model tokenize "$dir/none.gguf" x
printf 'GGUF\003\000\000\000' >"$dir/short.gguf"
expect_one_line_error "truncated file" "truncated" "$hearth" model tokenize "$dir/short.gguf" x
echo "tokenize: all checks passed"
