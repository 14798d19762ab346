#!/usr/bin/env bash
# The worker channel's transport, CAF 0.17.6's OpenSSL module, with `hearth keygen --worker`'s
# credentials: two nodes of one household talk; a node of another household, a node without
# credentials (CAF's anonymous ciphers), and a plain middleman connection are refused, in both
# directions. Usage: test_worker_tls.sh PATH/TO/hearth PATH/TO/tls_probe
source "$(dirname "$0")/lib.sh"
hearth=$1
probe=$2
"$hearth" keygen --worker "$dir/home" 2>/dev/null
"$hearth" keygen --worker "$dir/other" 2>/dev/null
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# serve NAME CREDENTIALS: a probe listening on a free port ($port).
serve() {
  port=$(free_port)
  "$probe" serve "$port" "$2" >"$dir/$1.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$dir/$1.out" && return; sleep 0.1; done
  fail "$1: the probe never listened: $(cat "$dir/$1.out")"
}
# refused WHAT COMMAND...: the probe's connection is refused (exit 2), within 10 s.
refused() {
  local what=$1 rc=0
  shift
  timeout 10 "$@" >"$dir/refused.out" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit $rc, expected a refusal: $(cat "$dir/refused.out")"
}

serve home "$dir/home"
"$probe" ask "$port" "$dir/home" | grep -q "answered 42" || fail "one household: no answer"
refused "another household's node" "$probe" ask "$port" "$dir/other"
refused "a node without credentials" "$probe" ask "$port" none
refused "a plain middleman" "$probe" ask-plain "$port"

# And the other way: a node with credentials refuses a listener without them.
serve anonymous none
refused "a listener without credentials" "$probe" ask "$port" "$dir/home"
