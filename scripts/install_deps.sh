#!/usr/bin/env bash
# Installs the Debian packages flashscope builds with, skipping those already present.
# The CUDA 13 toolkit (nvcc, CUPTI, NVTX3, cuDNN) is expected under /usr/local/cuda.
set -euo pipefail
PACKAGES=(cmake ninja-build ccache g++ pkg-config git
          libcli11-dev doctest-dev                 # command line, tests
          zlib1g-dev                               # compressed SASS listings (results/<gpu>/sass)
          libimgui-dev libglfw3-dev libgl-dev      # desktop explorer
          xvfb xauth                               # headless screenshots of the explorer
          python3-dev pybind11-dev                 # the Python module (explorer/python)
          python3-pytest python3-numpy             # its tests (tests/python)
          clang-14 libclang-rt-14-dev)             # libFuzzer and sanitizer runtimes (fuzz.sh)
missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "install_deps: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! command -v nvcc > /dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "install_deps: nvcc is at /usr/local/cuda/bin (add it to PATH)"
fi
command -v nvcc > /dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] \
  || { echo "install_deps: the CUDA 13 toolkit is missing (expected /usr/local/cuda)" >&2; exit 1; }
