# Sourced by the build scripts: sets CCACHE_LAUNCHER to the cmake argument that compiles through
# ccache (installed by setup.sh), so unchanged files cost nothing across build trees and clean
# clones. GPUPOOL_CCACHE=0 turns it off.
CCACHE_LAUNCHER=()
if [ "${GPUPOOL_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
  CCACHE_LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR=1
fi
