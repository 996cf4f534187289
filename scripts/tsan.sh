#!/usr/bin/env bash
# Builds gpupool with g++ + ThreadSanitizer (-DGPUPOOL_TSAN=ON, build/tsan) and runs the suites whose
# code runs threads: the REST client (kube: watches, retries, 8-thread creates), the cluster facade
# (cancellable wait/logs, port-forward listeners, the reliability tests' threads), the embedded
# server (HTTP workers, scheduler, controllers, kubelet, streams) and the Python calls that run C++
# worker threads beside the interpreter (the interpreter is not instrumented: g++'s shared libtsan
# is preloaded so the extension module's accesses and the GIL's pthread calls are seen). Any report fails the test (halt_on_error). CI runs it (scripts/test.sh).
#   scripts/tsan.sh [ctest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/tsan
. scripts/ccache.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=g++ "${CCACHE_LAUNCHER[@]}" -DGPUPOOL_BUILD_BENCH=OFF -DGPUPOOL_TSAN=ON \
  -DGPUPOOL_BUILD_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3 -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "${GPUPOOL_JOBS:-$(nproc)}"
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:history_size=4:suppressions=$PWD/scripts/tsan.supp}
# Python loads the instrumented extension into an uninstrumented interpreter: the runtime must be
# the first library loaded.
libtsan=$(g++ -print-file-name=libtsan.so)
LD_PRELOAD_PYTHON=$(readlink -f "$libtsan")
ctest --test-dir "$build" --output-on-failure -R '^(kube|cluster|embedded)$' -j "${GPUPOOL_JOBS:-$(nproc)}" "$@"
# The Python suites whose calls run C++ worker threads beside the interpreter: wait()/logs()
# (test_cluster.py, with Ctrl-C from outside) and port-forward/exec (test_streams.py). The streams
# server is an instrumented test binary started without the preload, so the commands it execs (an
# uninstrumented /bin/sh would crash under libtsan) run plain.
PYTHONPATH="$build/bindings/python" GPUPOOL_CLI="$PWD/$build/gpupool" PYTHONDONTWRITEBYTECODE=1 LD_PRELOAD="$LD_PRELOAD_PYTHON" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python/test_cluster.py tests/python/test_streams.py
