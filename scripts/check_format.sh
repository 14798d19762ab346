#!/usr/bin/env bash
# Every C++ file as .clang-format writes it (Debian's clang-format 14), generated tables aside:
# the test command runs this, so a change that is not formatted fails the suite.
#   bash scripts/check_format.sh [REPO_ROOT]      fix: git clang-format, or clang-format -i FILE
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
# Generated: the Unicode tables (scripts/gen_unicode_tables.py) and llama.cpp's recorded cases.
generated='^model/unicode_tables\.cpp$|^tests/llama_cpp_.*\.inc$'
# One clang-format over every file, which reports each place it would change as FILE:LINE:COL:
# a process per file took 39 s of the suite on two cores, one process takes 2.
rc=0
out=$(git ls-files '*.cpp' '*.hpp' '*.h' '*.inc' | grep -Ev "$generated" |
  xargs -d '\n' clang-format --dry-run -Werror 2>&1) || rc=$?
if [ "$rc" -ne 0 ]; then
  bad=$(grep -oE '^[^: ]+:[0-9]+:[0-9]+: error' <<<"$out" | cut -d: -f1 | sort -u || true)
  if [ -z "$bad" ]; then
    printf 'check_format: could not check (exit %s):\n%s\n' "$rc" "$out"
    exit 1
  fi
  printf 'check_format: not as .clang-format writes it: %s\n' $bad
  exit 1
fi
echo "check_format: every C++ file is formatted"
