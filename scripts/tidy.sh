#!/usr/bin/env bash
# Runs clang-tidy 14 with .clang-tidy over the library, the command and the Python binding, using
# build/clang's compile_commands.json (scripts/build.sh clang first) and, for the binding (which only
# the g++ tree builds), build/gcc's. Prints the findings and fails
# when there are any. Slow (about 15 s per file on one core): not part of scripts/test.sh; run it
# before a release or after large changes.  scripts/tidy.sh [-jN] [files...]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=1
if [[ "${1:-}" == -j* ]]; then jobs=${1#-j}; shift; fi
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[ -n "$tidy" ] || { echo "tidy.sh: clang-tidy not found; run scripts/setup.sh" >&2; exit 1; }
[ -f build/clang/compile_commands.json ] || { echo "tidy.sh: run scripts/build.sh clang first" >&2; exit 1; }
if [ $# -eq 0 ]; then
  mapfile -t files < <(git ls-files 'libgpupool/*.cpp' 'cli/*.cpp' 'bindings/python/src/*.cpp')
else
  files=("$@")
fi
tidy_one() {
  local db=build/clang
  [[ "$1" == bindings/* && -f build/gcc/compile_commands.json ]] && db=build/gcc
  "$tidy" -p "$db" --quiet "$1" 2>/dev/null || true
}
export -f tidy_one
export tidy
out=$(printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} bash -c 'tidy_one "$1"' _ {})
findings=$(grep -E ': (warning|error): ' <<<"$out" | sort -u || true)
if [ -n "$findings" ]; then
  echo "$findings"
  echo "tidy: $(wc -l <<<"$findings") findings in ${#files[@]} files" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files clean"
