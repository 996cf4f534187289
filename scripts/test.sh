#!/usr/bin/env bash
# Installs what is missing, builds with g++ and clang (-Wall -Wextra -Werror) and runs every test,
# then the C++ tests under ASan + UBSan, the threaded suites under TSan, and a short run of every
# fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
status=0
echo "== format (.clang-format)"
scripts/format.sh --check || status=1
for cc in ${GPUPOOL_COMPILERS:-gcc clang}; do
  echo "== build ($cc)"
  # The Python package (bindings/python, ctest's "python" test) is built and tested with g++.
  extra=(); [ "$cc" = gcc ] && extra=(-DGPUPOOL_BUILD_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3)
  scripts/build.sh "$cc" "${extra[@]}"
  echo "== test ($cc)"
  ctest --test-dir "build/$cc" --output-on-failure -j "${GPUPOOL_JOBS:-$(nproc)}" || status=1
done
# Memory and undefined-behaviour errors: every C++ suite again under clang ASan + UBSan (build/asan),
# then a short libFuzzer run of each parser target (the long runs are in RELIABILITY.md).
# GPUPOOL_SANITIZE=0 skips both (e.g. a quick local run).
if [ "${GPUPOOL_SANITIZE:-1}" != 0 ]; then
  echo "== sanitizers (clang ASan + UBSan)"
  scripts/sanitize.sh || status=1
  echo "== ThreadSanitizer (g++; client, embedded server, Python worker threads)"
  scripts/tsan.sh || status=1
  echo "== fuzz (${GPUPOOL_FUZZ_SECONDS:-15} s per target)"
  scripts/fuzz.sh "${GPUPOOL_FUZZ_SECONDS:-15}" || status=1
fi
exit $status
