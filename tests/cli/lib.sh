# Shared by the CLI test scripts: a scratch folder removed on exit, failure reporting, and the
# check that bad input ends with exit code 1 and exactly one line naming the problem.
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
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
