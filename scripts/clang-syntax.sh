#!/usr/bin/env bash
# Quick check before a commit that clang 14 (CI's second compiler) accepts every translation unit of
# the g++ build: clang++-14 -fsyntax-only with each file's flags from build/gcc/compile_commands.json.
# A few minutes instead of a full clang build. Usage: scripts/clang-syntax.sh [path-substring...]
set -euo pipefail
cd "$(dirname "$0")/.."
db=build/gcc/compile_commands.json
[ -f "$db" ] || { echo "clang-syntax.sh: $db missing: run scripts/build.sh gcc first" >&2; exit 2; }
work=$(mktemp -d /tmp/clang-syntax.XXXX)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$db" "$work" "$@" <<'PY'
import json, shlex, sys
db, work, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
for i, e in enumerate(json.load(open(db))):
    f = e["file"]
    if wanted and not any(w in f for w in wanted):
        continue
    args = shlex.split(e["command"])
    if args[0].endswith("ccache"):
        args = args[1:]
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MT"):
            skip = True
        elif a not in ("-c", "-MD", f):
            out.append(a)
    cmd = " ".join(shlex.quote(x) for x in ["clang++-14", "-fsyntax-only", *out, f])
    with open(f"{work}/{i:04d}.sh", "w") as s:
        s.write(f"cd {shlex.quote(e['directory'])} && {cmd} || {{ echo 'clang-syntax.sh: FAILED {f}'; exit 1; }}\n")
PY
ls "$work"/*.sh | xargs -P "${GPUPOOL_JOBS:-$(nproc)}" -n1 bash
echo "clang-syntax.sh: clang 14 accepts every file checked"
