#!/usr/bin/env bash
# Formats every C++ file of the tree with .clang-format (clang-format 14, from scripts/setup.sh).
#   scripts/format.sh          rewrite the files in place
#   scripts/format.sh --check  list the files that are not formatted and fail (CI runs this)
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$fmt" ] || { echo "format.sh: clang-format not found; run scripts/setup.sh" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cc')
if [ "${1:-}" = --check ]; then
  bad=()
  for f in "${files[@]}"; do
    "$fmt" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    printf 'not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files formatted"
else
  "$fmt" -i "${files[@]}"
fi
