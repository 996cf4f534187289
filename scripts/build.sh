#!/usr/bin/env bash
# Configures and builds gpupool with one compiler: scripts/build.sh [gcc|clang] [extra cmake args...]
# The build tree is build/<compiler>.
set -euo pipefail
cd "$(dirname "$0")/.."
cc=${1:-gcc}; shift || true
case "$cc" in
  gcc) cxx=g++ ;;
  clang) cxx=clang++-14 ;;
  *) echo "build.sh: unknown compiler '$cc' (use gcc or clang)" >&2; exit 2 ;;
esac
jobs=${GPUPOOL_JOBS:-$(nproc)}
. scripts/ccache.sh
cmake -S . -B "build/$cc" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" "${CCACHE_LAUNCHER[@]}" "$@" >/dev/null
cmake --build "build/$cc" -j "$jobs"
