#!/usr/bin/env bash
# Installs what is missing, builds the explorer and the Python module, and opens the explorer:
# live on a GPU host, otherwise on the measured results shipped in results/. Extra arguments go
# to the explorer.
#   scripts/run.sh [explorer arguments...]
# Without a GPU it needs only the small `ci` kernel set, which is what scripts/test.sh builds: it
# uses test.sh's folder, build-ci (configured as test.sh does, by scripts/ci_build.sh), so what
# one of the two built the other reuses. On a GPU host it builds the `prog` set in build/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/scripts/install_deps.sh"
export PATH="$PATH:/usr/local/cuda/bin"
# ccache shares objects between build folders: see scripts/ci_build.sh.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
if ! nvidia-smi -L > /dev/null 2>&1; then
  BUILD="$ROOT/build-ci"
  if [[ -f $BUILD/CMakeCache.txt ]]; then
    echo "run.sh: no GPU found; reusing $BUILD (the ci kernel set scripts/test.sh builds) and" \
      "opening the shipped results"
  else
    echo "run.sh: no GPU found; building the ci kernel set in $BUILD (the folder scripts/test.sh" \
      "uses, so it will not build them again) and opening the shipped results"
  fi
  "$ROOT/scripts/ci_build.sh" "$BUILD" explorer flashscope_python > /dev/null
else
  BUILD="$ROOT/build"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLASHSCOPE_BUILD_TESTS=OFF \
    -DFLASHSCOPE_KERNEL_SET=prog
  cmake --build "$BUILD" -j "$(nproc)" --target explorer flashscope_python
fi
if compgen -G "$BUILD/python/flashscope/_core*.so" > /dev/null; then
  echo "run.sh: the Python module is in $BUILD/python (PYTHONPATH=${BUILD#"$ROOT"/}/python)"
fi
exec "$BUILD/explorer/explorer" "$@"
