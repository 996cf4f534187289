#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang + ASan + UBSan in build/asan and runs each for
# the given number of seconds (default 20), starting from fuzz/corpus/<target>/. New inputs go to
# build/asan/fuzz-corpus/<target>/ (the seed corpus is not modified). Exits non-zero on any crash,
# leak, timeout or sanitizer report; the reproducer is left in build/asan/fuzz-artifacts/.
#   scripts/fuzz.sh [seconds] [target...]      e.g. scripts/fuzz.sh 300 quantity taint
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}; shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(quantity taint image kubeconfig profile manifest topology api_decode api)
build=build/asan
. scripts/ccache.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 "${CCACHE_LAUNCHER[@]}" -DGPUPOOL_BUILD_BENCH=OFF -DGPUPOOL_SANITIZE=ON \
  -DGPUPOOL_BUILD_FUZZ=ON >/dev/null
cmake --build "$build" -j "${GPUPOOL_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"
mkdir -p "$build/fuzz-artifacts"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$build/fuzz-corpus/$t"
  echo "== fuzz_$t (${seconds}s)"
  log="$build/fuzz-artifacts/fuzz_$t.log"
  if ! ASAN_OPTIONS=detect_leaks=1 "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
      -artifact_prefix="$build/fuzz-artifacts/$t-" "$build/fuzz-corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1; then
    echo "fuzz_$t FAILED (see $log)"; tail -n 30 "$log"; status=1
  fi
  grep -E '^stat::number_of_executed_units' "$log" | sed "s/^/fuzz_$t /" || true
done
exit $status
