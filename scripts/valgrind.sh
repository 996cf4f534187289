#!/usr/bin/env bash
# valgrind memcheck over `gpupool` command processes and a short Python session (issue 8 item 3).
#
#   scripts/valgrind.sh [build-dir]      (default build/gcc; builds gpupool_cli and the Python module there)
#
# Each `gpupool` invocation runs under memcheck against a persistent embedded cluster (`--embedded
# seed`, state kept in a scratch GPUPOOL_STATE_DIR between commands), so the client, the renderer
# and the embedded API server it hosts are all checked: submit, taint, get, list, wait, logs,
# dry-run -o yaml, delete, and bad flags / bad values / a missing job (exit codes 1 and 2). A run
# fails if memcheck reports any error or a definitely/indirectly lost block, or if the command's
# exit code is not the expected one. Logs: <build-dir>/valgrind/*.log.
#
# The Python part runs /usr/bin/python3 with PYTHONMALLOC=malloc and Debian's CPython suppressions
# (/usr/lib/valgrind/python3.supp, from the python3 package) over `import gpupool`, an embedded
# cluster and a submit dry run. CPython does not free everything at exit, so "possibly lost" blocks
# count only when a gpupool frame allocated them outside module initialisation; memory errors and
# definitely lost blocks count wherever they are.
# Not in CI (several minutes on a loaded 2-core machine); figures in RELIABILITY.md.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/gcc}
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S . -B "$build" -G Ninja -DGPUPOOL_BUILD_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3 >/dev/null
fi
cmake --build "$build" -j "${GPUPOOL_JOBS:-2}" --target gpupool_cli gpupool_python >/dev/null
cli="$build/gpupool"
[[ -x "$cli" ]] || { echo "valgrind.sh: no gpupool binary under $build" >&2; exit 1; }
logs="$build/valgrind"
rm -rf "$logs"
mkdir -p "$logs"
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
export GPUPOOL_STATE_DIR="$state"

memcheck=(valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect
          --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --track-origins=no --num-callers=30)
failures=0 runs=0
# run EXPECTED_EXIT NAME ARGS...
run() {
  local expect=$1 name=$2
  shift 2
  local log="$logs/$name.log" start=$SECONDS code=0
  "${memcheck[@]}" --log-file="$log" "$cli" --embedded seed "$@" >"$logs/$name.out" 2>"$logs/$name.err" || code=$?
  runs=$((runs + 1))
  local errors lost
  errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$log" | tail -n1)
  lost=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tail -n1)
  printf '%-14s exit %-3s (want %s)  memcheck errors %-3s definitely lost %-6s %4ss\n' \
    "$name" "$code" "$expect" "${errors:-?}" "${lost:-0}" "$((SECONDS - start))"
  if [[ $code -ne $expect || "${errors:-?}" != "0" ]]; then
    failures=$((failures + 1))
    echo "  FAILED: see $log and $logs/$name.err" >&2
  fi
}

horovod=registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5
run 0 nodes nodes
run 0 taint taint cn-beijing.192.168.3.230 ssd_node=invalid:NoSchedule
run 0 submit submit mpi --name=mpi-dist --gpus=1 --workers=1 --toleration ssd_node --image=$horovod \
  --tensorboard --pvc-create mpi-data:standard:1Gi:/data "mpirun python train.py"
run 0 wait wait mpi-dist --for Running --timeout 5m
run 0 get get mpi-dist
run 0 get-json get mpi-dist -o json
run 0 list list
run 0 logs logs mpi-dist
run 0 dry-run-yaml submit job --name dry --image busybox --gpus 1 --dry-run -o yaml "echo hi"
run 1 submit-taken submit mpi --name=mpi-dist --gpus=1 --workers=1 --toleration ssd_node --image=$horovod "true"
run 2 bad-flag submit job --name x --image busybox --no-such-flag "echo hi"
run 2 bad-gpus submit job --name x --image busybox --gpus=-1 "echo hi"
run 2 bad-taint taint cn-beijing.192.168.3.230 "not a taint"
run 1 get-missing get no-such-job
run 0 delete delete mpi-dist
echo "gpupool processes: $runs runs, $failures failed"

# ---- Python -------------------------------------------------------------------------------------
py_log="$logs/python.log"
start=$SECONDS
code=0
PYTHONPATH="$build/bindings/python" PYTHONMALLOC=malloc \
  valgrind --tool=memcheck --suppressions=/usr/lib/valgrind/python3.supp --leak-check=full \
  --show-leak-kinds=definite,possible --errors-for-leak-kinds=definite --num-callers=40 --log-file="$py_log" \
  /usr/bin/python3 - >"$logs/python.out" 2>&1 <<'EOF' || code=$?
import gpupool
with gpupool.EmbeddedCluster(topology="seed") as cluster:
    result = cluster.submit("job", name="dry", image="busybox", gpus=1, command="echo hi", dry_run=True)
    assert result.created, result
    assert [n.node.name for n in cluster.nodes()][0] == "cn-beijing.192.168.3.225"
print("python session ok")
EOF
py_errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$py_log" | tail -n1)
py_lost=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$py_log" | tail -n1)
py_possibly=$(sed -n 's/.*possibly lost: \([0-9,]*\) bytes.*/\1/p' "$py_log" | tail -n1)
# Leak records (definitely or possibly lost) with a frame in gpupool, except those allocated by the
# module's initialisation (PyInit__gpupool: exception types, enums, pybind11 type objects, which
# live as long as the interpreter and CPython does not tear down at exit).
gp_leaks=$(awk '/are (definitely|possibly) lost in loss record/ {rec=1; hit=0; init=0; next}
                rec && /_gpupool|libgpupool|gpupool::/ {hit=1}
                rec && /PyInit__gpupool/ {init=1}
                rec && /^==[0-9]+== $/ {if (hit && !init) n++; rec=0}
                END {print n+0}' "$py_log")
gp_init=$(grep -c 'by 0x[0-9A-F]*: PyInit__gpupool' "$py_log" || true)
# Memory errors (not leaks): records other than leak records.
mem_errors=$(grep -cE '^==[0-9]+== (Invalid|Conditional jump|Use of uninitialised|Syscall param|Mismatched|Source and destination)' "$py_log" || true)
printf 'python         exit %-3s  memcheck errors %s (memory errors %s), definitely lost %s bytes, possibly lost %s bytes (%s records from module init), other leak records with a gpupool frame %s  %ss\n' \
  "$code" "${py_errors:-?}" "$mem_errors" "${py_lost:-0}" "${py_possibly:-0}" "$gp_init" "$gp_leaks" "$((SECONDS - start))"
grep -q "python session ok" "$logs/python.out" || { echo "  FAILED: the Python session did not finish: $logs/python.out" >&2; failures=$((failures + 1)); }
if [[ $code -ne 0 || "${py_errors:-?}" != "0" || $mem_errors -ne 0 || $gp_leaks -ne 0 ]]; then
  failures=$((failures + 1))
  echo "  FAILED: see $py_log" >&2
fi
[[ $failures -eq 0 ]]
