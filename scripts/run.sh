#!/usr/bin/env bash
# Installs what is missing, builds the explorer and opens it: live on a GPU host, otherwise on
# the measured results shipped in results/. Extra arguments go to the explorer.
#   scripts/run.sh [explorer arguments...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build"
"$ROOT/scripts/install_deps.sh"
export PATH="$PATH:/usr/local/cuda/bin"
KERNEL_SET=prog
if ! nvidia-smi -L > /dev/null 2>&1; then
  # No GPU: the explorer only shows shipped results, so the smallest kernel set will do.
  KERNEL_SET=ci
  echo "run.sh: no GPU found; building the ci kernel set and opening the shipped results"
fi
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLASHSCOPE_BUILD_TESTS=OFF \
  -DFLASHSCOPE_KERNEL_SET="$KERNEL_SET"
cmake --build "$BUILD" -j "$(nproc)" --target explorer
exec "$BUILD/explorer/explorer" "$@"
