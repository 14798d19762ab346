#!/usr/bin/env bash
# `hearth worker` and a server that uses it ([[engine.worker]]), across real processes over
# loopback TCP: the same greedy text as the single-process server, token for token and in
# parallel; a worker that outlives its server (stopped, or killed with -9) and is joined again by
# the next; a server with another model
# file refused at join, naming both; a worker stopped under its server exits 0; a worker gone
# silent (SIGSTOP) or killed with -9 mid-request: the request ends with `internal` naming the
# worker and the server exits non-zero. Usage: test_worker.sh PATH/TO/hearth
source "$(dirname "$0")/lib.sh"
hearth=$1

# start_worker NAME MODEL [ARGS...]: `hearth worker` on a free loopback port in the background;
# sets $worker_endpoint once it listens and $worker_pid.
start_worker() {
  local name=$1 model=$2
  shift 2
  "$hearth" worker --listen 'tcp://127.0.0.1:0' --model "$model" --threads 1 --compute f32 "$@" \
    >"$dir/$name.out" 2>"$dir/$name.err" &
  pids+=($!)
  worker_pid=$!
  worker_endpoint=$(await_endpoint "worker $name" "$worker_pid" "$dir/$name" 'listening on tcp://[0-9.:]*' 14)
}

# start_long_chat NAME: a greedy chat of 1500 tokens through $endpoint in the background
# ($chat_pid), once it streams its first text into $dir/NAME.out.
start_long_chat() {
  "$hearth" chat -e "$endpoint" --temperature 0 -n 1500 "a long one" >"$dir/$1.out" 2>"$dir/$1.err" &
  chat_pid=$!
  for _ in $(seq 1 100); do
    [ -s "$dir/$1.out" ] && return 0
    sleep 0.05
  done
  fail "the long request streamed nothing: $(cat "$dir/$1.err")"
}

# remote_config FILE ENDPOINT: a configuration whose one worker is at ENDPOINT.
remote_config() {
  printf '[[engine.worker]]\nendpoint = "%s"\n' "$2" >"$1"
}

# answers: three greedy answers, asked at once, each after a line "== i" (in the order asked).
answers() {
  local i asked=()
  for i in 1 2 3; do
    "$hearth" chat -e "$endpoint" --temperature 0 -n 40 "question number $i about the weather" \
      >"$dir/answer.$i" 2>"$dir/answer.$i.err" &
    asked+=($!)
  done
  for i in 1 2 3; do
    wait "${asked[$((i - 1))]}" || fail "chat $i failed: $(cat "$dir/answer.$i.err")"
    [ -s "$dir/answer.$i" ] || fail "chat $i got no text: $(cat "$dir/answer.$i.err")"
    echo "== $i"
    cat "$dir/answer.$i"
  done
}

# Option errors, one line each, before any model is read.
expect_one_line_error "listen without a scheme" "--listen 127.0.0.1:7100: a worker endpoint is tcp://HOST:PORT" \
  "$hearth" worker --listen 127.0.0.1:7100 --model "$dir/none.gguf"
expect_one_line_error "no model file" "none.gguf" "$hearth" worker --listen 'tcp://127.0.0.1:0' --model "$dir/none.gguf"
printf '[[engine.worker]]\nendpoint = "127.0.0.1:7100"\n' >"$dir/bad.toml"
expect_one_line_error "worker endpoint without a scheme" "bad.toml:2: \[engine.worker\].endpoint 127.0.0.1:7100" \
  "$hearth" serve --model "$dir/none.gguf" --config "$dir/bad.toml"

"$hearth" model make --preset tiny --dtype f32 --seed 5 -o "$dir/tiny.gguf" >/dev/null
"$hearth" model make --preset tiny --dtype f32 --seed 6 -o "$dir/other.gguf" >/dev/null
# A backend this machine cannot run is refused at start, naming it (no GPU, or a build without CUDA).
expect_one_line_error "a cuda worker without a device" "cuda backend: no device\|--backend \"cuda\": this build of Hearth has no CUDA backend" \
  "$hearth" worker --listen 'tcp://127.0.0.1:0' --model "$dir/tiny.gguf" --backend cuda

# The single-process server's answers: the oracle.
start_serve local --model "$dir/tiny.gguf"
expected=$(answers)
stop_serve "$dir/local.err"

start_worker worker "$dir/tiny.gguf"
remote_config "$dir/remote.toml" "$worker_endpoint"
start_serve remote --model "$dir/tiny.gguf" --config "$dir/remote.toml"
grep -q "joined worker $worker_endpoint in " "$dir/remote.err" || fail "serve logs no join: $(cat "$dir/remote.err")"
got=$(answers)
[ "$got" = "$expected" ] || fail "the remote worker's answers differ:"$'\n'"$got"$'\n'"from the local ones:"$'\n'"$expected"
stop_serve "$dir/remote.err"

# Over TLS with keygen --worker's credentials: the same answers. A server of another household,
# or one without credentials, cannot connect; off loopback, a worker or an entry without
# credentials is refused at start, naming it.
"$hearth" keygen --worker "$dir/home" 2>/dev/null
"$hearth" keygen --worker "$dir/stranger" 2>/dev/null
plain_worker=$worker_endpoint
plain_pid=$worker_pid
start_worker tls "$dir/tiny.gguf" --credentials "$dir/home"
grep -q "listening on $worker_endpoint (TLS)" "$dir/tls.out" || fail "no TLS in the ready line: $(cat "$dir/tls.out")"
tls_config() {
  printf '[[engine.worker]]\nendpoint = "%s"\ncredentials = "%s"\n' "$worker_endpoint" "$2" >"$1"
}
tls_config "$dir/tls.toml" "$dir/home"
start_serve tls_serve --model "$dir/tiny.gguf" --config "$dir/tls.toml"
got=$(answers)
[ "$got" = "$expected" ] || fail "over TLS the answers differ:"$'\n'"$got"
stop_serve "$dir/tls_serve.err"
# The same worker as the prefill side of a disaggregated pair over TLS: its KV blocks cross the
# channel into the decode side here, and the answers stay the same.
printf '[engine]\nmode = "disaggregated"\n\n[[engine.worker]]\nendpoint = "%s"\ncredentials = "%s"\nrole = "prefill"\n' \
  "$worker_endpoint" "$dir/home" >"$dir/tls_pair.toml"
start_serve tls_pair --model "$dir/tiny.gguf" --config "$dir/tls_pair.toml"
got=$(answers)
[ "$got" = "$expected" ] || fail "a prefill side over TLS answers differently:"$'\n'"$got"
"$hearth" status -e "$endpoint" --json --interval 0 >"$dir/tls_pair.json"
/usr/bin/python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["engine"]; assert e["kv_shipped_bytes"] > 0, e' \
  "$dir/tls_pair.json" || fail "no KV shipped over TLS: $(cat "$dir/tls_pair.json")"
stop_serve "$dir/tls_pair.err"
tls_config "$dir/stranger.toml" "$dir/stranger"
remote_config "$dir/plain.toml" "$worker_endpoint"
for who in stranger plain; do
  expect_one_line_error "a $who server" "worker $worker_endpoint: cannot connect" \
    timeout 30 "$hearth" serve --threads 1 --endpoint 'tcp://127.0.0.1:*' --model "$dir/tiny.gguf" --config "$dir/$who.toml"
done
kill -TERM "$worker_pid"
wait "$worker_pid" || fail "the TLS worker exited non-zero on SIGTERM: $(cat "$dir/tls.err")"
worker_endpoint=$plain_worker
worker_pid=$plain_pid
expect_one_line_error "a port open to anyone" "worker tcp://0.0.0.0:0: off this machine the channel needs credentials" \
  "$hearth" worker --listen 'tcp://0.0.0.0:0' --model "$dir/tiny.gguf"
printf '[[engine.worker]]\nendpoint = "tcp://192.0.2.7:7100"\n' >"$dir/far.toml"
expect_one_line_error "a far worker without credentials" \
  "far.toml:2: \[engine.worker\].endpoint worker tcp://192.0.2.7:7100: off this machine the channel needs credentials" \
  "$hearth" serve --model "$dir/tiny.gguf" --config "$dir/far.toml"

# The worker outlives its server, and the next one joins it.
kill -0 "$worker_pid" || fail "the worker ended with its server: $(cat "$dir/worker.err")"
start_serve again --model "$dir/tiny.gguf" --config "$dir/remote.toml"
got=$(answers)
[ "$got" = "$expected" ] || fail "after a rejoin the answers differ: $got"
stop_serve "$dir/again.err"
[ "$(grep -c "joined by the server" "$dir/worker.err")" -eq 2 ] && [ "$(grep -c "left; waiting for the next one" "$dir/worker.err")" -eq 2 ] ||
  fail "the worker logs no two joins and departures: $(cat "$dir/worker.err")"

# Another model file: refused at join, before the server is ready, naming both files.
expect_one_line_error "another model file" \
  "worker $worker_endpoint: join refused: model file hash differs: .*tiny.gguf (.*) here, .*other.gguf (.*) at the server" \
  timeout 30 "$hearth" serve --threads 1 --endpoint 'tcp://127.0.0.1:*' --model "$dir/other.gguf" --config "$dir/remote.toml"
grep -q "refused the server .*model file hash differs" "$dir/worker.err" || fail "the worker logs no refusal: $(cat "$dir/worker.err")"

# A server killed with -9: the worker notices its connection go and takes the next server.
start_serve killed --model "$dir/tiny.gguf" --config "$dir/remote.toml"
{ kill -9 "$serve_pid" && wait "$serve_pid"; } 2>/dev/null || true
for _ in $(seq 1 50); do
  grep -q "is gone (the connection was lost); waiting for the next one" "$dir/worker.err" && break
  sleep 0.1
done
grep -q "is gone (the connection was lost); waiting for the next one" "$dir/worker.err" ||
  fail "the worker did not notice its server die: $(cat "$dir/worker.err")"
start_serve after_kill --model "$dir/tiny.gguf" --config "$dir/remote.toml"
got=$(answers)
[ "$got" = "$expected" ] || fail "after a server was killed the answers differ: $got"
stop_serve "$dir/after_kill.err"

# No worker at the endpoint: the server does not start.
worker_gone=$worker_endpoint
kill -TERM "$worker_pid"
rc=0
wait "$worker_pid" || rc=$?
[ "$rc" -eq 0 ] || fail "worker exited with $rc after SIGTERM: $(cat "$dir/worker.err")"
expect_one_line_error "no worker there" "worker $worker_gone: cannot connect" \
  timeout 30 "$hearth" serve --threads 1 --endpoint 'tcp://127.0.0.1:*' --model "$dir/tiny.gguf" --config "$dir/remote.toml"

# A worker stopped (SIGTERM) under a joined server: it exits 0 at once, and the server, which
# has no worker left, exits 1 naming it.
start_worker stopped "$dir/tiny.gguf"
remote_config "$dir/stopped.toml" "$worker_endpoint"
start_serve stopped_serve --model "$dir/tiny.gguf" --config "$dir/stopped.toml"
"$hearth" chat -e "$endpoint" -n 4 hi >/dev/null 2>&1 || fail "chat through the worker to be stopped failed"
kill -TERM "$worker_pid"
rc=0
await_exit "$worker_pid" "the worker does not exit on SIGTERM under a server"
wait "$worker_pid" || rc=$?
[ "$rc" -eq 0 ] || fail "worker exited with $rc after SIGTERM under a server: $(cat "$dir/stopped.err")"
rc=0
await_exit "$serve_pid" "serve does not exit after its worker stopped"
wait "$serve_pid" || rc=$?
[ "$rc" -eq 1 ] && grep -q "worker $worker_endpoint was shut down" "$dir/stopped_serve.err" ||
  fail "serve exit $rc after its worker stopped: $(cat "$dir/stopped_serve.err")"

# A worker that goes silent with its connection open (SIGSTOP, as a machine that hangs): the
# server drops it after the middleman's 5 s without heartbeats, the request in flight ends with
# `internal`, and the worker, woken, finds its server gone and exits 0 on SIGTERM.
start_worker frozen "$dir/tiny.gguf"
remote_config "$dir/frozen.toml" "$worker_endpoint"
start_serve frozen_serve --model "$dir/tiny.gguf" --config "$dir/frozen.toml"
start_long_chat frozen_chat
kill -STOP "$worker_pid"
rc=0
await_exit "$chat_pid" "chat hangs on a silent worker"
wait "$chat_pid" || rc=$?
[ "$rc" -eq 3 ] && grep -q "internal: .*worker $worker_endpoint is unreachable" "$dir/frozen_chat.err" ||
  fail "chat on a silent worker: exit $rc: $(cat "$dir/frozen_chat.err")"
await_exit "$serve_pid" "serve does not exit after its worker went silent"
rc=0
wait "$serve_pid" || rc=$?
[ "$rc" -eq 1 ] || fail "serve exit $rc after its worker went silent, expected 1: $(cat "$dir/frozen_serve.err")"
kill -CONT "$worker_pid"
for _ in $(seq 1 50); do
  grep -q "is gone (the connection was lost)" "$dir/frozen.err" && break
  sleep 0.1
done
grep -q "is gone (the connection was lost)" "$dir/frozen.err" || fail "the woken worker still holds its server: $(cat "$dir/frozen.err")"
kill -TERM "$worker_pid"
rc=0
wait "$worker_pid" || rc=$?
[ "$rc" -eq 0 ] || fail "the woken worker exited with $rc after SIGTERM"

# A worker killed mid-request: the request ends with `internal` naming the worker, the server
# exits non-zero (for its service manager to restart it), nothing hangs.
start_worker doomed "$dir/tiny.gguf"
remote_config "$dir/doomed.toml" "$worker_endpoint"
start_serve doomed_serve --model "$dir/tiny.gguf" --config "$dir/doomed.toml"
start_long_chat long
{ kill -9 "$worker_pid" && wait "$worker_pid"; } 2>/dev/null || true  # reaped: no "Killed" line from bash
rc=0
await_exit "$chat_pid" "chat hangs after the worker died"
wait "$chat_pid" || rc=$?
[ "$rc" -eq 3 ] || fail "chat exit $rc after the worker died, expected 3: $(cat "$dir/long.err")"
grep -q "internal: .*worker $worker_endpoint is unreachable" "$dir/long.err" || fail "chat's error: $(cat "$dir/long.err")"
rc=0
await_exit "$serve_pid" "serve does not exit after its worker died"
wait "$serve_pid" || rc=$?
[ "$rc" -eq 1 ] || fail "serve exit $rc after its worker died, expected 1: $(cat "$dir/doomed_serve.err")"
echo "test_worker: ok"
