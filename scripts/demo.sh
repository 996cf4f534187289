#!/usr/bin/env bash
# Installs what is missing, builds gpupool and runs the seed's scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh gcc >/dev/null
build/gcc/render_seed_job
