#!/usr/bin/env bash
# End-to-end run on a GPU host: configure and build with every core, run the tests (GPU tests
# included), then the stages asked for, writing every log under LOG_DIR.
#
#   scripts/gpu_host.sh LOG_DIR [--stages build,test,sweep,sanitize,sass] [--set prog]
#                               [--steps 1-16] [--arch native] [--sweep-args "..."] [--no-torch]
#
# --no-torch skips the FA2 reference (libtorch makes configure and build slower).
# Stages: build (always), test (ctest: host + GPU tests), sweep (explorer --csv over the built
# kernels), sanitize (compute-sanitizer memcheck + racecheck on each built kernel at a small
# shape), sass (per-kernel SASS instruction counts from cuobjdump). Header-only dependencies a
# GPU host lacks (CLI11, doctest) are read from .deps/include: fill it on a machine that has
# them with `scripts/vendor_header_deps.sh` and send it along with the tree.
set -euo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
LOG_DIR=$(mkdir -p "$1" && cd "$1" && pwd)
shift
STAGES="build,test,sweep,sanitize,sass"
KERNEL_SET="prog"
STEPS=""
ARCH="native"
SWEEP_ARGS=""
WITH_TORCH=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --stages) STAGES="$2"; shift 2 ;;
    --set) KERNEL_SET="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --arch) ARCH="$2"; shift 2 ;;
    --sweep-args) SWEEP_ARGS="$2"; shift 2 ;;
    --no-torch) WITH_TORCH=0; shift ;;
    -h|--help) usage ;;
    *) echo "gpu_host.sh: unknown option $1" >&2; usage ;;
  esac
done
has_stage() { [[ ",$STAGES," == *",$1,"* ]]; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build-gpu"
JOBS=$(nproc)
SECONDS=0
log() { echo "[gpu_host $(printf '%4d' $SECONDS)s] $*" | tee -a "$LOG_DIR/summary.txt"; }

log "host: $(hostname), $JOBS cores; $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -1)"
CMAKE_ARGS=(-S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
            -DFLASHSCOPE_KERNEL_SET="$KERNEL_SET" -DFLASHSCOPE_STEPS="$STEPS"
            -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DFLASHSCOPE_PTXAS_VERBOSE=ON)
if [[ $WITH_TORCH == 1 ]] && TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null); then
  CMAKE_ARGS+=(-DCMAKE_PREFIX_PATH="$TORCH_PREFIX")
fi

log "configure: set=$KERNEL_SET steps=${STEPS:-all} arch=$ARCH"
cmake "${CMAKE_ARGS[@]}" > "$LOG_DIR/build.log" 2>&1 || { tail -30 "$LOG_DIR/build.log"; exit 1; }
log "build"
if ! cmake --build "$BUILD" -j "$JOBS" >> "$LOG_DIR/build.log" 2>&1; then
  grep -E "error|FAILED" "$LOG_DIR/build.log" | head -30
  exit 1
fi
# Registers, spills and stack per kernel from ptxas, one line each.
grep -E "Compiling entry|Used [0-9]+ registers|spill" "$LOG_DIR/build.log" \
  | sed 's/^ptxas info *: //' > "$LOG_DIR/resources.txt" || true
log "built $("$BUILD/explorer/explorer" --list | wc -l) kernels"

EXPLORER="$BUILD/explorer/explorer"
STATUS=0
if has_stage test; then
  log "ctest"
  if ! ctest --test-dir "$BUILD" --output-on-failure -j 1 > "$LOG_DIR/ctest.log" 2>&1; then
    STATUS=1
  fi
  tail -15 "$LOG_DIR/ctest.log" | tee -a "$LOG_DIR/summary.txt"
fi

if has_stage sweep && "$EXPLORER" --help | grep -q -- "--csv"; then
  log "sweep: explorer --csv $SWEEP_ARGS"
  # shellcheck disable=SC2086
  "$EXPLORER" --csv --output "$LOG_DIR/sweep.csv" $SWEEP_ARGS 2> "$LOG_DIR/sweep.log" || STATUS=1
  tail -3 "$LOG_DIR/sweep.log" | tee -a "$LOG_DIR/summary.txt"
fi

if has_stage sanitize && "$EXPLORER" check --help > /dev/null 2>&1; then
  log "compute-sanitizer memcheck + racecheck on every built kernel (B=1, H=2, N=256)"
  : > "$LOG_DIR/sanitizer.log"
  while read -r step config; do
    for tool in memcheck racecheck; do
      if ! compute-sanitizer --tool "$tool" --error-exitcode 9 "$EXPLORER" check --step "$step" \
          --config "$config" --batch 1 --heads 2 --seq-len 256 >> "$LOG_DIR/sanitizer.log" 2>&1; then
        echo "SANITIZER FAILURE: $tool step $step $config" | tee -a "$LOG_DIR/summary.txt"
        STATUS=1
      fi
    done
  done < <("$EXPLORER" --list | grep -E "^[0-9]+ \((FP16|BF16), 128, (64|128), (32|64), 4\)")
  log "sanitizer: $(grep -c 'ERROR SUMMARY: 0 errors' "$LOG_DIR/sanitizer.log") clean runs, $(grep -E 'ERROR SUMMARY: [1-9]' -c "$LOG_DIR/sanitizer.log") with errors"
fi

if has_stage sass; then
  log "SASS instruction counts"
  "$ROOT/scripts/sass_counts.sh" "$BUILD" > "$LOG_DIR/sass.txt" 2>&1 || true
fi
log "done (status $STATUS)"
exit $STATUS
