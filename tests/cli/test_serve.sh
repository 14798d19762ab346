#!/usr/bin/env bash
# `hearth keygen`, `hearth serve` and `hearth chat` end to end over loopback: keys, development
# mode, the same greedy text as `hearth generate --chat`, piped input, exit codes, CURVE with a
# tenants file, SIGHUP reload, SIGTERM shutdown. Usage: test_serve.sh PATH/TO/hearth
source "$(dirname "$0")/lib.sh"
hearth=$1

# Keys: a file only its owner can read, the public key on stdout and in NAME.pub beside it,
# never overwritten.
pub=$("$hearth" keygen -o "$dir/client.key" 2>/dev/null)
[ ${#pub} -eq 40 ] || fail "keygen printed '$pub'"
[ "$(stat -c %a "$dir/client.key")" = 600 ] || fail "key file mode $(stat -c %a "$dir/client.key")"
grep -qxF "public = \"$pub\"" "$dir/client.key" || fail "key file lacks the public key"
[ "$(cat "$dir/client.pub")" = "$pub" ] && [ "$(stat -c %a "$dir/client.pub")" = 644 ] ||
  fail "client.pub: '$(cat "$dir/client.pub")', mode $(stat -c %a "$dir/client.pub")"
expect_one_line_error "existing key file" "client.key" "$hearth" keygen -o "$dir/client.key"
rm "$dir/client.pub"
expect_one_line_error "a pair is never split" "client.key: exists" "$hearth" keygen -o "$dir/client.key"
[ ! -e "$dir/client.pub" ] || fail "keygen wrote a .pub for an existing key file"
touch "$dir/taken.pub"
expect_one_line_error "an existing .pub" "taken.pub: exists" "$hearth" keygen -o "$dir/taken.key"
[ ! -e "$dir/taken.key" ] && [ ! -s "$dir/taken.pub" ] || fail "keygen wrote half a pair beside taken.pub"
"$hearth" keygen -o "$dir/other" >/dev/null 2>&1 && [ -e "$dir/other.pub" ] || fail "keygen -o other wrote no other.pub"

# Option errors: one line and exit 1 (not CLI11's own codes), the valid values listed.
expect_one_line_error "unknown option" "not expected: --bogus" "$hearth" chat --bogus
expect_one_line_error "unknown policy" "nosuch not in {fcfs,priority,vtc,slo,household}" \
  "$hearth" serve --policy nosuch
expect_one_line_error "bad number" "--max-tokens" "$hearth" chat -n many hi
expect_one_line_error "no subcommand" "subcommand" "$hearth"
# An endpoint without a scheme: the one meant, in chat and in serve (before any model is read).
expect_one_line_error "chat endpoint without a scheme" "did you mean tcp://localhost:5555?" \
  "$hearth" chat -e localhost:5555 hi
expect_one_line_error "serve endpoint without a scheme" "did you mean tcp://127.0.0.1:5555?" \
  "$hearth" serve --model "$dir/none.gguf" -e 127.0.0.1:5555

# Development mode: loopback only. These refusals come before any model is read (none.gguf
# does not exist): a mistake is told at once, not after loading a large file.
expect_one_line_error "public bind without keys" "development mode" \
  "$hearth" serve --model "$dir/none.gguf" --endpoint 'tcp://0.0.0.0:*'

# Operator traps refused at start, not served past: a misspelt section (ignored, it left the
# server in development mode) and ports libzmq wraps (99999 binds 34463). `timeout`: a server
# that starts anyway fails the check instead of hanging the script.
printf '[sever]\nsecret_key_file = "%s/server.key"\nendpoint = "tcp://0.0.0.0:5555"\n' "$dir" >"$dir/typo.toml"
expect_one_line_error "misspelt section" "typo.toml:1: \[sever\] is not a known section" \
  timeout 30 "$hearth" serve --model "$dir/none.gguf" --config "$dir/typo.toml"
printf '[server]\nendpoint = "tcp://127.0.0.1:99999"\n' >"$dir/port.toml"
expect_one_line_error "port out of range in the file" "port.toml:2: \[server\].endpoint .*port 99999" \
  timeout 30 "$hearth" serve --model "$dir/none.gguf" --config "$dir/port.toml"
expect_one_line_error "port out of range on the command line" "endpoint tcp://127.0.0.1:99999: port 99999" \
  timeout 30 "$hearth" serve --model "$dir/none.gguf" --endpoint 'tcp://127.0.0.1:99999'

# The HTTP gateway too: a non-loopback address without keys is refused like the ZeroMQ one.
expect_one_line_error "public http without keys" "non-loopback address needs HTTP keys" \
  timeout 30 "$hearth" serve --model "$dir/none.gguf" --http 0.0.0.0:0 --endpoint 'tcp://127.0.0.1:*'
expect_one_line_error "http endpoint with a scheme" "write HOST:PORT without a scheme (127.0.0.1:8080)" \
  timeout 30 "$hearth" serve --model "$dir/none.gguf" --http http://127.0.0.1:8080 --endpoint 'tcp://127.0.0.1:*'
"$hearth" model make --preset tiny --dtype f32 --seed 5 -o "$dir/tiny.gguf" >/dev/null
start_serve dev --model "$dir/tiny.gguf" --http 127.0.0.1:0
grep -q "development mode" "$dir/dev.out" || fail "serve does not say it is in development mode"
http=$(grep -o 'APIs on http://[0-9.:]*' "$dir/dev.out" | cut -c9-)
[ -n "$http" ] || fail "serve --http prints no http endpoint: $(cat "$dir/dev.out")"
q="Tell me a story about a hearth."
served=$("$hearth" chat -e "$endpoint" --temperature 0 -n 16 "$q")
local_text=$("$hearth" generate -m "$dir/tiny.gguf" -p "$q" --chat --temperature 0 -n 16 --compute f32 --threads 1 2>"$dir/generate.err")
grep -q "tiny.gguf is a generated model (random weights" "$dir/generate.err" ||
  fail "generate does not say the model is generated: $(cat "$dir/generate.err")"
[ -n "$served" ] && [ "$served" = "$local_text" ] || fail "chat '$served' differs from generate '$local_text'"
grep -q "tiny.gguf is a generated model (random weights" "$dir/dev.out" || fail "serve does not say the model is generated"
notes=$("$hearth" chat -e "$endpoint" -n 1 hi 2>&1 >/dev/null)
grep -q "model 'tiny' is a generated one (random weights)" <<<"$notes" || fail "chat does not say the model is generated: $notes"
[ "$(curl -s "$http/")" = "Ollama is running" ] || fail "GET $http/ is not Ollama's greeting"
body='{"model":"tiny","stream":false,"messages":[{"role":"user","content":"'"$q"'"}],
       "options":{"temperature":0,"repeat_penalty":1,"num_predict":16}}'
over_http=$(curl -s "$http/api/chat" -d "$body" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["message"]["content"])')
[ "$over_http" = "$served" ] || fail "/api/chat '$over_http' differs from chat '$served'"
piped=$(printf '%s\n' "$q" | "$hearth" chat -e "$endpoint" --temperature 0 -n 16)
[ "$piped" = "$served" ] || fail "piped chat '$piped' differs from '$served'"
timing=$("$hearth" chat -e "$endpoint" -n 4 -v "hi" 2>&1 >/dev/null)
grep -q "TTFT .* ms | .* tok/s" <<<"$timing" || fail "chat -v prints no timings: $timing"
rc=0; "$hearth" chat -e "$endpoint" --tenant "not a name" hi >/dev/null 2>"$dir/refused.err" || rc=$?
[ "$rc" -eq 3 ] && grep -q "bad_request" "$dir/refused.err" || fail "refused request: exit $rc, $(cat "$dir/refused.err")"
# `hearth status`: every tenant that asked, the engine, the rates between two readings; one
# more answer is one more `done`.
"$hearth" status -e "$endpoint" --json --interval 0 >"$dir/status0.json"
"$hearth" chat -e "$endpoint" -n 4 "one more" >/dev/null
"$hearth" status -e "$endpoint" --json --interval 200 >"$dir/status.json"
/usr/bin/python3 - "$dir/status0.json" "$dir/status.json" <<'PY' || fail "status --json: $(cat "$dir/status.json")"
import json, sys
before, s = (json.load(open(f)) for f in sys.argv[1:3])
names = [t["name"] for t in s["tenants"]]
assert names == sorted(names) and "chat" in names, names
chat = next(t for t in s["tenants"] if t["name"] == "chat")
chat0 = next(t for t in before["tenants"] if t["name"] == "chat")
assert chat["done"] == chat0["done"] + 1 and chat["running"] == 0 and chat["waiting"] == 0, (chat0, chat)
assert s["rates"]["interval_s"] > 0.1 and s["engine"]["policy"] == "household", s["rates"]
PY
"$hearth" status -e "$endpoint" --interval 0 >"$dir/status.txt"
grep -q "^engine: 0 running, 0 waiting" "$dir/status.txt" && grep -q "^chat " "$dir/status.txt" ||
  fail "status: $(cat "$dir/status.txt")"
stop_serve "$dir/dev.err"
# Nothing listens there now: refused at once (not after --timeout's 30 s), saying what to do.
rc=0; timeout 5 "$hearth" chat -e "$endpoint" hi >/dev/null 2>"$dir/gone.err" || rc=$?
[ "$rc" -eq 2 ] && grep -qF "no server at $endpoint — start one with \`hearth serve\`" "$dir/gone.err" ||
  fail "chat to a stopped server: exit $rc, expected 2: $(cat "$dir/gone.err")"
rc=0; timeout 5 "$hearth" status -e "$endpoint" >/dev/null 2>"$dir/gone.err" || rc=$?
[ "$rc" -eq 2 ] && grep -qF "no server at $endpoint" "$dir/gone.err" ||
  fail "status of a stopped server: exit $rc, expected 2: $(cat "$dir/gone.err")"

# An engine that fails ends the process, non-zero, after every request got `internal`: a step
# limit of 1 ms stands for a hung backend (a 200-token prefill takes far longer).
printf '[engine]\nstep_timeout_ms = 1\n' >"$dir/hang.toml"
start_serve hang --model "$dir/tiny.gguf" --config "$dir/hang.toml"
long_q=$(printf 'the kitchen light number %d, ' $(seq 1 40))
rc=0; "$hearth" chat -e "$endpoint" -n 4 "$long_q" >/dev/null 2>"$dir/hang.chat" || rc=$?
[ "$rc" -eq 3 ] && grep -q "internal" "$dir/hang.chat" || fail "chat to a failed engine: exit $rc, $(cat "$dir/hang.chat")"
rc=0; wait "$serve_pid" || rc=$?
[ "$rc" -eq 1 ] || fail "serve exited with $rc after its engine failed, expected 1: $(cat "$dir/hang.err")"
grep -q "the engine failed: scheduler stopped: worker: step 1 has not returned in 1 ms" "$dir/hang.err" ||
  fail "serve did not say why its engine failed: $(cat "$dir/hang.err")"

# CURVE: the server's key file and a tenants file with the client's key.
server_pub=$("$hearth" keygen -o "$dir/server.key" 2>/dev/null)
cat >"$dir/home.toml" <<TOML
[server]
secret_key_file = "$dir/server.key"
heartbeat_ms = 200

[model]
path = "$dir/tiny.gguf"

[engine]
policy = "fcfs"
max_seqs = 8

[[tenant]]
name = "kitchen"
key = "$pub"
admin = true
TOML
start_serve curve --config "$dir/home.toml"
grep -qF "server public key $server_pub" "$dir/curve.out" || fail "serve does not print its key: $(cat "$dir/curve.out")"
# --server-key takes the server.pub keygen wrote as well as the key's text.
curve_text=$("$hearth" chat -e "$endpoint" --server-key "$dir/server.pub" --key "$dir/client.key" --temperature 0 -n 16 "$q")
[ "$curve_text" = "$served" ] || fail "CURVE chat '$curve_text' differs from '$served'"
# Refused at the handshake, each said at once (not after --timeout's 30 s).
rc=0; timeout 10 "$hearth" chat -e "$endpoint" hi >/dev/null 2>"$dir/nokeys.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "handshake: the handshake with $endpoint failed" "$dir/nokeys.err" ||
  fail "chat without keys to a CURVE server: exit $rc, expected 2: $(cat "$dir/nokeys.err")"
"$hearth" keygen -o "$dir/stranger.key" >/dev/null 2>&1
rc=0; timeout 10 "$hearth" chat -e "$endpoint" --server-key "$server_pub" --key "$dir/stranger.key" hi >/dev/null 2>"$dir/stranger.err" || rc=$?
[ "$rc" -eq 2 ] && grep -qF "unauthorized: the server at $endpoint refused this client's key: its tenants list no $(cat "$dir/stranger.pub")" "$dir/stranger.err" ||
  fail "chat with an unknown key: exit $rc, expected 2: $(cat "$dir/stranger.err")"
# The server logs each refused handshake: where from, and the key it does not know.
stranger_pub=$(cat "$dir/stranger.pub")
grep -qF "refused a handshake from 127.0.0.1: CURVE key $stranger_pub is listed for no tenant" "$dir/curve.err" ||
  fail "no log line for the unknown key: $(cat "$dir/curve.err")"
# ...and each admin action: who, what, how it ended.
PYTHONPATH="$(dirname "$0")/../../clients/python" /usr/bin/python3 - "$endpoint" "$dir/server.pub" "$dir/client.key" <<'PY'
import sys
import hearth_client as hc
endpoint, server_pub, client_key = sys.argv[1:4]
mine = hc.load_keys(client_key)
with hc.Client(endpoint, server_key=hc.load_keys(server_pub).public, public_key=mine.public,
               secret_key=mine.secret) as c:
    c.admin_set_policy("slo")
    c.admin_set_policy("fcfs")
PY
grep -qF "admin set_policy slo by tenant 'kitchen': done (policy fcfs -> slo)" "$dir/curve.err" ||
  fail "no log line for the admin action: $(cat "$dir/curve.err")"
# status as the admin tenant (a tenant that is not one is refused: test_gateway).
"$hearth" status -e "$endpoint" --server-key "$dir/server.pub" --key "$dir/client.key" --interval 0 | grep -q "^kitchen " ||
  fail "status as the admin tenant lists no kitchen"

# hup_expect PATTERN WHAT: sends SIGHUP and waits for the log line PATTERN; then the server must
# still serve a CURVE chat.
hup_expect() {
  kill -HUP "$serve_pid"
  for _ in $(seq 1 50); do grep -q "$1" "$dir/curve.err" && break; sleep 0.1; done
  grep -q "$1" "$dir/curve.err" || fail "$2: $(cat "$dir/curve.err")"
  "$hearth" chat -e "$endpoint" --server-key "$server_pub" --key "$dir/client.key" -n 2 hi >/dev/null ||
    fail "the server stopped serving after: $2"
}

# SIGHUP re-reads the policy and says what changed; a broken file is refused and changes nothing,
# and so is an emptied one, which would shut every client out of a CURVE server.
sed -i 's/policy = "fcfs"/policy = "vtc"/' "$dir/home.toml"
hup_expect "reloaded .*policy fcfs -> vtc" "SIGHUP did not reload"
sed -i 's/policy = "vtc"/policy = "nonsense"/' "$dir/home.toml"
hup_expect "reload refused.*nonsense" "a bad policy was not refused"
: >"$dir/home.toml"
hup_expect "reload refused: .*home.toml lists no tenant" "an empty file was not refused"
stop_serve "$dir/curve.err"

# A server key and no tenant: nobody could ever connect, and the start says so.
start_serve lonely --model "$dir/tiny.gguf" --key "$dir/server.key"
grep -q "warning: a server key but no tenant with a key: no client can ever connect" "$dir/lonely.err" ||
  fail "no warning for a CURVE server without tenants: $(cat "$dir/lonely.err")"
stop_serve "$dir/lonely.err"
echo "serve, chat, keygen: all checks passed"
