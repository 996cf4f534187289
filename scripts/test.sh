#!/usr/bin/env bash
# Installs what is missing, builds with g++ and clang (-Wall -Wextra -Werror) and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
status=0
for cc in ${GPUPOOL_COMPILERS:-gcc clang}; do
  echo "== build ($cc)"
  scripts/build.sh "$cc"
  echo "== test ($cc)"
  ctest --test-dir "build/$cc" --output-on-failure -j "${GPUPOOL_JOBS:-$(nproc)}" || status=1
done
exit $status
