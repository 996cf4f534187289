#!/usr/bin/env bash
# Installs what is missing, builds with g++ and clang (-Wall -Wextra -Werror) and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
status=0
for cc in ${GPUPOOL_COMPILERS:-gcc clang}; do
  echo "== build ($cc)"
  # The Python package (bindings/python, ctest's "python" test) is built and tested with g++.
  extra=(); [ "$cc" = gcc ] && extra=(-DGPUPOOL_BUILD_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3)
  scripts/build.sh "$cc" "${extra[@]}"
  echo "== test ($cc)"
  ctest --test-dir "build/$cc" --output-on-failure -j "${GPUPOOL_JOBS:-$(nproc)}" || status=1
done
exit $status
