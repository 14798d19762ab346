#!/usr/bin/env bash
# `hearth chat` at a terminal (a pseudo-terminal driven by chat_repl.py): commands, Ctrl-C
# cancelling an answer, Ctrl-C and Ctrl-D at the prompt, a conversation outgrowing what the
# server takes. Usage: test_chat_repl.sh PATH/TO/hearth
source "$(dirname "$0")/lib.sh"
hearth=$1
"$hearth" model make --preset tiny --dtype f32 --seed 5 -o "$dir/tiny.gguf" >/dev/null
start_serve long --model "$dir/tiny.gguf"
long=$endpoint long_pid=$serve_pid
printf '[[tenant]]\nname = "chat"\nquota = { max_prompt_tokens = 120 }\n' >"$dir/small.toml"
start_serve small --model "$dir/tiny.gguf" --config "$dir/small.toml"
/usr/bin/python3 "$(dirname "$0")/chat_repl.py" "$hearth" "$long" "$dir/long.err" "$endpoint"
stop_serve "$dir/small.err"
serve_pid=$long_pid
stop_serve "$dir/long.err"
