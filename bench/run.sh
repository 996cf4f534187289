#!/usr/bin/env bash
# bench/run.sh — build what the benchmarks need in build/bench and run every comparison; each
# figure is printed with its ratio against a baseline measured in the same run (see README.md).
#
#   bench/run.sh                 everything (a few minutes on 2 cores)
#   bench/run.sh place decode    only some sections: store sched place decode submit raw python command views
#
# Environment: N_CXX (1000), N_PY (200), N_KUBECTL (50) submissions per client kind; the ratios
# are per job, so the counts only trade run time against noise. The machine may be shared: heavy
# steps run under `nice`, and the load average is printed with the results.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build/bench
DATA=$B/data
PY=/usr/bin/python3
N_CXX=${N_CXX:-1000}
N_PY=${N_PY:-200}
N_KUBECTL=${N_KUBECTL:-50}
SECTIONS=${*:-store place decode submit raw python command views}
want() { [[ " $SECTIONS " == *" $1 "* ]]; }

# RelWithDebInfo (-O2 -g), the project's default build: symbols for perf/callgrind. (Release -O3
# trips a g++ 12 -Wrestrict false positive in std::string code.)
cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUPOOL_BUILD_BENCH=ON \
  -DGPUPOOL_BUILD_TESTS=OFF -DGPUPOOL_BUILD_PYTHON=ON -DPython_EXECUTABLE=$PY >/dev/null
TARGETS="bench_store bench_model bench_submit bench_views bench_client gpupool_cli"
want python && TARGETS="$TARGETS gpupool_python"  # the module (its package copy comes with it)
nice cmake --build "$B" -j2 --target $TARGETS >/dev/null
export PYTHONPATH=$B/bindings/python
RESULTS=$B/results.txt
: >"$RESULTS"
run() { "$@" | tee -a "$RESULTS"; }

echo "# gpupool benchmarks — $(date -u +%FT%TZ) — $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

if want place || want decode; then
  mkdir -p "$DATA"
  # Regenerate when the generator changed (GEN_VERSION bumps with bench_model.cpp's cluster shape).
  GEN_VERSION=2
  if [[ ! -s $DATA/pods.json || "$(cat "$DATA/gen.version" 2>/dev/null)" != "$GEN_VERSION" ]]; then
    nice "$B/bench/bench_model" gen "$DATA" && echo "$GEN_VERSION" >"$DATA/gen.version"
  fi
fi
want store && run nice "$B/bench/bench_store"
want sched && ! want store && run nice "$B/bench/bench_store" sched
want place && run nice "$B/bench/bench_model" place "$DATA"
if want decode; then
  run nice "$B/bench/bench_model" decode "$DATA"
  run nice $PY "$ROOT/bench/bench_py.py" decode "$DATA"
fi

# Each measurement gets a fresh embedded API server (HTTPS on 127.0.0.1, in its own process): the
# server's work per create grows with the objects it already holds (README: what bounds submit), so a
# shared server would charge each client kind for the ones that ran before it.
start_server() {  # [server command...] (default: bench_submit serve, the seed topology)
  rm -f "$B/kubeconfig.path"
  local cmd=("$@")
  [[ ${#cmd[@]} -gt 0 ]] || cmd=("$B/bench/bench_submit" serve "$B")
  exec 3> >(exec "${cmd[@]}")
  SERVER_PID=$!
  for _ in $(seq 3000); do [[ -s $B/kubeconfig.path ]] && break; sleep 0.1; done
  [[ -s $B/kubeconfig.path ]] || { echo "bench/run.sh: the embedded server did not start" >&2; exit 1; }
  KC=$(cat "$B/kubeconfig.path")
}
stop_server() {  # closing its stdin stops it; wait, so that runs never overlap
  exec 3>&-
  while kill -0 "$SERVER_PID" 2>/dev/null; do sleep 0.1; done
}
if want submit; then
  mkdir -p "$B/kubectl-jobs"
  for c in 1 8; do
    # gpupool C++ at every count, so that each baseline has a gpupool figure at its own count.
    for n in $(printf '%s\n' "$N_KUBECTL" "$N_PY" "$N_CXX" | sort -nu); do
      start_server; run "$B/bench/bench_submit" cxx "$KC" "$n" $c; stop_server
    done
    start_server; run $PY "$ROOT/bench/bench_py.py" submit-gpupool "$KC" "$N_PY" $c; stop_server
    start_server; run $PY "$ROOT/bench/bench_py.py" submit-python "$KC" "$N_PY" $c; stop_server
    start_server; run $PY "$ROOT/bench/bench_py.py" submit-kubectl "$KC" "$N_KUBECTL" $c "$B/kubectl-jobs"; stop_server
  done
  # Python submit CPU per job beside the C++ client's and C++ Cluster::submit's (issue 18).
  start_server; run $PY "$ROOT/bench/bench_py.py" submit-ratio "$KC" "$B/bench/bench_client" "$N_PY"; stop_server
fi
if want raw; then
  # Issue 18 item 5: gpupool's submit against a raw keep-alive HTTP/1.1 generator sending the same
  # bodies, each on a fresh embedded server in bench_submit's own process, alternating, medians.
  for c in 1 8; do run nice "$B/bench/bench_submit" compare "$N_CXX" $c "${RAW_REPS:-3}"; done
fi
if want python; then
  run $PY "$ROOT/bench/bench_py.py" import 15
  run $PY "$ROOT/bench/bench_py.py" call 100000
fi
if want command; then
  start_server
  "$B/bench/bench_submit" cxx "$KC" 1 1 >/dev/null  # the Deployment both `get`s read
  run $PY "$ROOT/bench/bench_py.py" command "$KC" "$B/gpupool" "$B/kubectl-jobs" 7
  stop_server
  # get / submit against kubectl on a server of its own, with where the time goes (issue 18).
  run $PY "$ROOT/bench/bench_cmd.py" "$B/gpupool" 21
fi

if want views; then
  # The whole-cluster views: an embedded server loaded with cluster_gen's 5,000 nodes and 150,000
  # pods (its scheduler binds them while loading: a few minutes), the lists' floor, then the views
  # and the kubectl / official Python client baselines (bench_py.py views; VIEWS_REPS runs each).
  start_server "$B/bench/bench_views" serve "$B" "${VIEWS_PODS:-150000}"
  run "$B/bench/bench_views" lists "$KC"
  run "$B/bench/bench_views" kept  # what the views keep per node (heap bytes), no server needed
  run $PY "$ROOT/bench/bench_py.py" views "$KC" "$B/gpupool" "$RESULTS" "${VIEWS_REPS:-3}"
  stop_server
fi

echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
$PY "$ROOT/bench/bench_py.py" summary "$RESULTS"
