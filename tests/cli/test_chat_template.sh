#!/usr/bin/env bash
# `hearth generate --chat` and the file's chat template: one Hearth does not recognise is refused
# in one line naming the file and the families it formats (never formatted as plain text), while
# the same file still completes a raw prompt; a file without a template formats the turn as plain
# "role: content" lines. Usage: test_chat_template.sh PATH/TO/hearth PATH/TO/tokenizer_fixture_model
source "$(dirname "$0")/lib.sh"
hearth=$1
fixture_model=$2

"$fixture_model" "$dir/alpaca.gguf" spm hearth-fixture "### Instruction:
{{ prompt }}
### Response:"
expect_one_line_error "unrecognised template" \
  "alpaca.gguf: chat template not recognised (Hearth formats llama2, llama3, llama3.1, chatml, qwen2.5, mistral, zephyr, phi3, gemma" \
  "$hearth" generate --model "$dir/alpaca.gguf" --chat --prompt "hi" -n 1
"$hearth" generate --model "$dir/alpaca.gguf" --prompt "hi" -n 1 >/dev/null || fail "a raw prompt on the same file"
"$hearth" model info "$dir/alpaca.gguf" | grep -q "^chat template  unrecognised$" || fail "model info"

"$fixture_model" "$dir/none.gguf" spm hearth-fixture ""
"$hearth" model info "$dir/none.gguf" | grep -q "^chat template  plain$" || fail "model info without a template"
"$hearth" generate --model "$dir/none.gguf" --chat --prompt "hi" -n 2 >/dev/null || fail "plain turns without a template"
echo "ok"
