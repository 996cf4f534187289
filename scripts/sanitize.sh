#!/usr/bin/env bash
# Builds gpupool with clang + AddressSanitizer + UndefinedBehaviorSanitizer (-DGPUPOOL_SANITIZE=ON,
# build/asan; the same tree scripts/fuzz.sh uses) and runs the C++ test suites under them with ctest.
# Any sanitizer report aborts the test (-fno-sanitize-recover=all) and fails the script.
# CI runs it (scripts/test.sh); figures in RELIABILITY.md.
#   scripts/sanitize.sh [ctest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/asan
. scripts/ccache.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 "${CCACHE_LAUNCHER[@]}" -DGPUPOOL_BUILD_BENCH=OFF -DGPUPOOL_SANITIZE=ON \
  -DGPUPOOL_BUILD_FUZZ=ON >/dev/null
cmake --build "$build" -j "${GPUPOOL_JOBS:-$(nproc)}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# install_and_consume builds an example against the installed (instrumented) library with plain
# flags; it tests packaging, not memory safety, and is covered by scripts/test.sh.
ctest --test-dir "$build" --output-on-failure -E '^install_and_consume$' -j "${GPUPOOL_JOBS:-$(nproc)}" "$@"
