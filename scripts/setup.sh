#!/usr/bin/env bash
# Installs every Debian package gpupool needs to build, test and benchmark. Idempotent: only
# missing packages are installed, and a machine that has them all is left untouched.
set -euo pipefail
PKGS=(
  cmake ninja-build g++ clang-14 libclang-rt-14-dev clang-format-14 clang-tidy-14 pkg-config git
  libyaml-cpp-dev libfmt-dev libssl-dev zlib1g-dev
  libboost1.81-dev libboost-json1.81-dev
  doctest-dev pybind11-dev
  python3 python3-dev python3-pytest python3-pybind11 python3-kubernetes
  python3-nbclient python3-ipykernel python3-nbformat python3-setuptools python3-pip python3-wheel
  python3-yaml  # kubeconfigs in tests/fidelity/fuzz.py
  valgrind rsync ccache libtsan2
  openmpi-bin  # mpirun, for the Local run mode MPIJob test (tests/embedded/local_jobs_test.cpp)
  tzdata  # /usr/share/zoneinfo: CronJob time zones (common/time_zone_file, as Go's time.LoadLocation)
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
