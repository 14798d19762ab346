#!/usr/bin/env bash
# Every C++ file as .clang-format writes it (Debian's clang-format 14), generated tables aside:
# the test command runs this, so a change that is not formatted fails the suite.
#   bash scripts/check_format.sh [REPO_ROOT]      fix: git clang-format, or clang-format -i FILE
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
# Generated: the Unicode tables (scripts/gen_unicode_tables.py) and llama.cpp's recorded cases.
generated='^model/unicode_tables\.cpp$|^tests/llama_cpp_.*\.inc$'
bad=()
while IFS= read -r f; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.inc' | grep -Ev "$generated")
if [ ${#bad[@]} -gt 0 ]; then
  printf 'check_format: not as .clang-format writes it: %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: every C++ file is formatted"
