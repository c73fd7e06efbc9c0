#!/usr/bin/env bash
# Configures BUILD_DIR for the `ci` kernel set (every step once per dtype) exactly as
# scripts/test.sh does, and builds TARGETS (default: everything). scripts/run.sh calls it on a
# machine without a GPU, so the explorer and the Python module it builds come from the same
# folder and objects test.sh built, and neither script rebuilds what the other did.
#   scripts/ci_build.sh BUILD_DIR [TARGET...]
# Prints the Python interpreter the module is built for on its last line ("python: PATH", or
# "python: " when none has pytest), for test.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:?usage: scripts/ci_build.sh BUILD_DIR [TARGET...]}
shift
export PATH="$PATH:/usr/local/cuda/bin"
# ccache keys on paths relative to the repository, so the sanitizer build reuses this build's CUDA
# objects (generated sources live in each build folder), and does not hash the build folder
# (CCACHE_NOHASHDIR): nvcc's -lineinfo counts as debug information for ccache, which would then
# hash the folder's absolute path and miss in every other build folder (docs/hardening.md).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# The Python module is built for the first python3 that can run its tests (has pytest): the one
# on PATH, else Debian's, which install_deps.sh gave python3-pytest.
PYTHON=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" > /dev/null && "$candidate" -c "import pytest" 2> /dev/null; then
    PYTHON=$(command -v "$candidate")
    break
  fi
done
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLASHSCOPE_KERNEL_SET=ci \
  ${FLASHSCOPE_CUDA_ARCHITECTURES:+-DCMAKE_CUDA_ARCHITECTURES=$FLASHSCOPE_CUDA_ARCHITECTURES} \
  ${PYTHON:+-DPython3_EXECUTABLE=$PYTHON} >&2
targets=()
for target in "$@"; do
  targets+=(--target "$target")
done
cmake --build "$BUILD" -j "$(nproc)" "${targets[@]}" >&2
echo "python: $PYTHON"
