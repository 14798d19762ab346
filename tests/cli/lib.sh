# Shared by the CLI test scripts: a scratch folder removed on exit (and the servers started
# with start_serve killed), failure reporting, the check that bad input ends with exit code 1
# and exactly one line naming the problem, and `hearth serve` in the background.
set -euo pipefail
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }
# The kernel tuner's plans are cached in the build's own file (beside `hearth`), never the user's.
export HEARTH_KERNEL_CACHE=${HEARTH_KERNEL_CACHE:-$(dirname "$1")/kernel-plans.tsv}

# expect_one_line_error WHAT PATTERN COMMAND...
expect_one_line_error() {
  local what=$1 pattern=$2
  shift 2
  local rc=0 err
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" -eq 1 ] || fail "$what: exit code $rc, expected 1 ($err)"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "$what: more than one line: $err"
  grep -q -- "$pattern" <<<"$err" || fail "$what: '$err' lacks '$pattern'"
}

# start_serve NAME ARGS...: runs `$hearth serve` in the background, its output in $dir/NAME.out
# and .err; sets $endpoint once it listens and $serve_pid.
start_serve() {
  local name=$1
  shift
  "$hearth" serve --threads 1 --compute f32 --endpoint 'tcp://127.0.0.1:*' "$@" >"$dir/$name.out" 2>"$dir/$name.err" &
  pids+=($!)
  serve_pid=$!
  endpoint=$(await_endpoint "serve $name" "$serve_pid" "$dir/$name" 'on tcp://[0-9.:]*' 4)
}

# await_endpoint WHAT PID FILES PATTERN CUT: the tcp:// endpoint a background process prints in
# FILES.out (the match of PATTERN from character CUT on), once it does; fails if the process
# exits first (FILES.err shown) or prints none within 20 s.
await_endpoint() {
  local what=$1 pid=$2 files=$3 pattern=$4 cut=$5 found
  for _ in $(seq 1 200); do
    found=$(grep -o "$pattern" "$files.out" | cut -c"$cut"- || true)
    [ -n "$found" ] && echo "$found" && return 0
    kill -0 "$pid" 2>/dev/null || fail "$what exited: $(cat "$files.err")"
    sleep 0.1
  done
  fail "$what did not start: $(cat "$files.err")"
}

# await_exit PID WHY: waits up to 20 s for PID to exit (wait has no timeout), else fails
# with WHY. Polls every 0.1 s: at tail's default, once a second, a wait lasted up to a second more.
await_exit() {
  timeout 20 tail -s 0.1 --pid="$1" -f /dev/null || fail "$2"
}

# stop_serve LOG: SIGTERM to $serve_pid, which must exit 0 (else LOG is shown).
stop_serve() {
  kill -TERM "$serve_pid"
  local rc=0
  wait "$serve_pid" || rc=$?
  [ "$rc" -eq 0 ] || fail "serve exited with $rc after SIGTERM: $(cat "$1")"
}
