#!/usr/bin/env bash
# Builds the host code and every host test with AddressSanitizer and UndefinedBehaviorSanitizer
# (the CUDA kernels are not instrumented) and runs the host tests: any report fails its test.
# CI runs it from scripts/test.sh; docs/hardening.md describes it.
#   scripts/sanitize.sh [BUILD_DIR]          (default build-asan)
set -euo pipefail

usage() {
  cat << 'EOF'
usage: scripts/sanitize.sh [BUILD_DIR]

Configures BUILD_DIR (default build-asan) with -DFLASHSCOPE_SANITIZE=address,undefined (GCC,
C++ at -O1 -g1, -fno-sanitize-recover, _GLIBCXX_ASSERTIONS; no GUI), builds the host tests and
what they run (target host_tests; the explorer included), and runs `ctest -L host -LE no_asan`
there (a test labelled no_asan loads a library the ASan runtime refuses; it is named when
skipped). A sanitizer report aborts the test that triggered it, so the script fails on any
report.

The build type and kernel set are the ones scripts/test.sh builds (Release, ci;
FLASHSCOPE_CUDA_ARCHITECTURES is honoured) and CCACHE_BASEDIR defaults to the repository, so
ccache serves the uninstrumented CUDA objects from that build.
EOF
}
case "${1:-}" in -h | --help)
  usage
  exit 0
  ;;
esac
[[ $# -le 1 ]] || {
  usage >&2
  exit 2
}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-"$ROOT/build-asan"}
"$ROOT/scripts/install_deps.sh"
export PATH="$PATH:/usr/local/cuda/bin"

# Same build type and kernel set as scripts/test.sh, and ccache keyed on paths relative to the
# repository and not on the build folder (scripts/ci_build.sh says why): the (uninstrumented)
# CUDA objects then come from that build's cache entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
start=$(date +%s)
# C++ at -O1, as the sanitizers' documentation suggests (here test_sweep_cli.cpp compiled in 30 s
# of CPU against 53 s at -O3); the CUDA flags stay Release's, shared with scripts/test.sh.
# No GUI: its drawing code runs only in the gui-labelled tests (a display, Mesa), which are not
# host tests; the explorer's model and state, which the host tests and the benchmark run, are in.
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DFLASHSCOPE_BUILD_GUI=OFF \
  -DFLASHSCOPE_KERNEL_SET=ci -DFLASHSCOPE_SANITIZE=address,undefined \
  ${FLASHSCOPE_CUDA_ARCHITECTURES:+-DCMAKE_CUDA_ARCHITECTURES=$FLASHSCOPE_CUDA_ARCHITECTURES}
cmake --build "$BUILD" --target host_tests -j "$(nproc)"
built=$(date +%s)

# detect_leaks: a leak is a report too. protect_shadow_gap=0: the CUDA driver maps memory where
# ASan's shadow gap would be (only matters where a GPU is present). A report halts the test.
export ASAN_OPTIONS="detect_leaks=1:protect_shadow_gap=0:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
# Tests labelled no_asan load a library the sanitizer runtime cannot run (the label's comment in
# tests/ says which and why); they run in the ordinary build only.
excluded=$(ctest --test-dir "$BUILD" -L no_asan -N | sed -n 's/^ *Test *#[0-9]*: //p' | tr '\n' ' ')
[[ -z $excluded ]] || echo "sanitize: not run under ASan (label no_asan): $excluded"
ctest --test-dir "$BUILD" -L host -LE no_asan --output-on-failure -j "$(nproc)" || status=$?
echo "sanitize: build $((built - start)) s, host tests $(($(date +%s) - built)) s," \
  "ctest exit status $status"
exit "$status"
