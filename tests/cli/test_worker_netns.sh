#!/usr/bin/env bash
# Two `hearth worker`s and their server, each in a network namespace of its own, joined by veth
# pairs (real addresses, real network stacks, so the channel must be TLS): the server's greedy
# answers equal the single-process server's, token for token; the household bench runs across
# them; a worker killed with -9 mid-load loses no request (each ends once, with the text it would
# have had) and leaves no KV block held on the survivor, and the worker started again joins
# again; a worker joined without credentials,
# or with a stranger's, is refused. Needs root (ip netns); exits 77 (skipped) where namespaces
# cannot be made. Usage: test_worker_netns.sh PATH/TO/hearth
source "$(dirname "$0")/lib.sh"
hearth=$1

tag=$$
ns_server=hs$tag ns_a=ha$tag ns_b=hb$tag
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ns in "$ns_server" "$ns_a" "$ns_b"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

if ! ip netns add "$ns_server" 2>/dev/null; then
  echo "test_worker_netns: skipped: cannot make network namespaces here (needs root and ip netns)"
  exit 77
fi
ip netns add "$ns_a"
ip netns add "$ns_b"
# link NS SUBNET: a veth pair from the server's namespace to NS, 10.77.SUBNET.1 and .2.
link() {
  local ns=$1 net=$2
  ip link add "v$tag$net" type veth peer name "w$tag$net"
  ip link set "v$tag$net" netns "$ns_server"
  ip link set "w$tag$net" netns "$ns"
  ip -n "$ns_server" addr add "10.77.$net.1/24" dev "v$tag$net"
  ip -n "$ns" addr add "10.77.$net.2/24" dev "w$tag$net"
  ip -n "$ns_server" link set "v$tag$net" up
  ip -n "$ns" link set "w$tag$net" up
  ip -n "$ns" link set lo up
}
ip -n "$ns_server" link set lo up
link "$ns_a" 1
link "$ns_b" 2
in_server() { ip netns exec "$ns_server" "$@"; }

"$hearth" model make --preset tiny --dtype f32 --seed 5 -o "$dir/tiny.gguf" >/dev/null
"$hearth" keygen --worker "$dir/household" >/dev/null
"$hearth" keygen --worker "$dir/stranger" >/dev/null

# start_worker NAME NS ADDRESS [ARGS...]: `hearth worker` in NS on ADDRESS:7400 over TLS.
start_worker() {
  local name=$1 ns=$2 address=$3
  shift 3
  ip netns exec "$ns" "$hearth" worker --listen "tcp://$address:7400" --model "$dir/tiny.gguf" --threads 1 \
    --compute f32 --credentials "$dir/household" "$@" >"$dir/$name.out" 2>"$dir/$name.err" &
  pids+=($!)
  await_endpoint "worker $name" "$!" "$dir/$name" 'listening on tcp://[0-9.:]*' 14 >/dev/null
}
start_worker a "$ns_a" 10.77.1.2
worker_a_pid=${pids[-1]}
start_worker b "$ns_b" 10.77.2.2

# config FILE CREDENTIALS: both workers, with those credentials.
config() {
  printf '[[engine.worker]]\nendpoint = "tcp://10.77.1.2:7400"\ncredentials = "%s"\n' "$2" >"$1"
  printf '[[engine.worker]]\nendpoint = "tcp://10.77.2.2:7400"\ncredentials = "%s"\n' "$2" >>"$1"
}
config "$dir/workers.toml" "$dir/household"

# A far worker without credentials is refused at its line; with a stranger's, at the join.
printf '[[engine.worker]]\nendpoint = "tcp://10.77.1.2:7400"\n' >"$dir/plain.toml"
expect_one_line_error "a far worker without credentials" "plain.toml:2: .*needs credentials" \
  in_server "$hearth" serve --model "$dir/tiny.gguf" --config "$dir/plain.toml"
config "$dir/stranger.toml" "$dir/stranger"
expect_one_line_error "a stranger's credentials" "worker tcp://10.77.1.2:7400: cannot connect" \
  in_server timeout 30 "$hearth" serve --model "$dir/tiny.gguf" --endpoint 'tcp://127.0.0.1:*' \
  --config "$dir/stranger.toml"

# answers [in_server]: four greedy answers of 60 tokens, asked at once through $endpoint (in the
# server's namespace with in_server), each after a line "== i".
answers() {
  local i asked=()
  for i in 1 2 3 4; do
    "$@" "$hearth" chat -e "$endpoint" --temperature 0 -n 60 "question number $i about the garden" \
      >"$dir/answer.$i" 2>"$dir/answer.$i.err" &
    asked+=($!)
  done
  for i in 1 2 3 4; do
    wait "${asked[$((i - 1))]}" || fail "chat $i failed: $(cat "$dir/answer.$i.err")"
    [ -s "$dir/answer.$i" ] || fail "chat $i got no text: $(cat "$dir/answer.$i.err")"
    echo "== $i"
    cat "$dir/answer.$i"
  done
}

# The oracle: the single-process server, here.
start_serve local --model "$dir/tiny.gguf"
expected=$(answers)
stop_serve "$dir/local.err"

# start_server NAME: serve in the server's namespace on both workers.
start_server() {
  ip netns exec "$ns_server" "$hearth" serve --threads 1 --compute f32 --endpoint 'tcp://127.0.0.1:*' \
    --model "$dir/tiny.gguf" --config "$dir/workers.toml" >"$dir/$1.out" 2>"$dir/$1.err" &
  pids+=($!)
  serve_pid=$!
  endpoint=$(await_endpoint "serve $1" "$serve_pid" "$dir/$1" 'on tcp://[0-9.:]*' 4)
}
start_server across
grep -q "joined workers tcp://10.77.1.2:7400, tcp://10.77.2.2:7400 in " "$dir/across.err" ||
  fail "serve logs no join of both: $(cat "$dir/across.err")"
got=$(answers in_server)
[ "$got" = "$expected" ] || fail "the answers across namespaces differ:"$'\n'"$got"$'\n'"from:"$'\n'"$expected"
stats=$(in_server "$hearth" status -e "$endpoint" --interval 0 --json)
steps=$(python3 -c 'import json,sys; print(*[w["steps"] for w in json.load(sys.stdin)["engine"]["workers"]])' <<<"$stats")
read -r steps_a steps_b <<<"$steps"
[ "$steps_a" -gt 0 ] && [ "$steps_b" -gt 0 ] || fail "both workers should have run steps: $steps"
stop_serve "$dir/across.err"

# The household bench, its own server in the server's namespace, on both workers.
in_server "$hearth" bench serve --model "$dir/tiny.gguf" --worker tcp://10.77.1.2:7400 \
  --worker tcp://10.77.2.2:7400 --worker-credentials "$dir/household" --duration 8 --drain 20 \
  --no-progress --json "$dir/bench.json" >"$dir/bench.out" 2>"$dir/bench.err" ||
  fail "the bench across namespaces failed: $(cat "$dir/bench.err")"
python3 - "$dir/bench.json" <<'EOF' || fail "the bench's requests did not all end done: $(cat "$dir/bench.out")"
import json, sys
overall = json.load(open(sys.argv[1]))["report"]["overall"]
assert overall["issued"] > 0 and overall["done"] == overall["issued"], overall
EOF

# Mid-load, worker a is killed with -9: every chat still ends once with its text, and the
# survivor holds no KV block afterwards.
start_server failover
long_chats() {
  local i
  for i in 1 2 3 4 5 6; do
    in_server "$hearth" chat -e "$endpoint" --temperature 0 -n 400 "a long story number $i" \
      >"$dir/long.$i" 2>"$dir/long.$i.err" &
    chats+=($!)
  done
}
chats=()
long_chats
for _ in $(seq 1 100); do
  [ -s "$dir/long.6" ] && break
  sleep 0.05
done
{ kill -9 "$worker_a_pid" && wait "$worker_a_pid"; } 2>/dev/null || true
for i in 1 2 3 4 5 6; do
  wait "${chats[$((i - 1))]}" || fail "chat $i failed when worker a died: $(cat "$dir/long.$i.err")"
done
stats=$(in_server "$hearth" status -e "$endpoint" --interval 0 --json)
python3 - <<EOF || fail "after the failover: $stats"
import json
w = json.loads('''$stats''')["engine"]["workers"]
assert w[0]["lost"] and not w[1]["lost"], w
assert w[1]["kv_blocks_used"] == 0, w
EOF
# Worker a, started again where it was, joins again and answers as before.
start_worker a_again "$ns_a" 10.77.1.2
worker_lost() {
  in_server "$hearth" status -e "$endpoint" --interval 0 --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["engine"]["workers"][0]["lost"])'
}
for _ in $(seq 1 100); do
  [ "$(worker_lost)" = False ] && break
  sleep 0.1
done
[ "$(worker_lost)" = False ] || fail "worker a, restarted, did not join again: $(cat "$dir/failover.err")"
grep -q "worker tcp://10.77.1.2:7400 is unreachable: the connection to it was lost; [0-9]* requests carry on at the other workers" \
  "$dir/failover.err" || fail "serve logs no loss of worker a: $(cat "$dir/failover.err")"
grep -q "worker tcp://10.77.1.2:7400 joined again" "$dir/failover.err" ||
  fail "serve logs no rejoin of worker a: $(cat "$dir/failover.err")"
got=$(answers in_server)
[ "$got" = "$expected" ] || fail "the answers after worker a joined again differ:"$'\n'"$got"
stop_serve "$dir/failover.err"
# The same chats on the single-process server, at once as they were asked (a request's tokens do
# not depend on its batch): the texts the failover must have kept.
start_serve oracle --model "$dir/tiny.gguf"
wants=()
for i in 1 2 3 4 5 6; do
  "$hearth" chat -e "$endpoint" --temperature 0 -n 400 "a long story number $i" >"$dir/want.$i" 2>/dev/null &
  wants+=($!)
done
for i in 1 2 3 4 5 6; do
  wait "${wants[$((i - 1))]}" || fail "the single-process server's chat $i failed"
  cmp -s "$dir/want.$i" "$dir/long.$i" || fail "chat $i's text changed across the failover"
done
stop_serve "$dir/oracle.err"
echo "test_worker_netns: ok"
