#!/usr/bin/env bash
# End-to-end run on a GPU host: configure and build with every core, run the tests (GPU tests
# included), then the stages asked for, writing every log under LOG_DIR.
#
#   scripts/gpu_host.sh LOG_DIR [--stages build,test,sweep,sanitize,sass,peak,results]
#                               [--set prog] [--steps 1-21] [--tune-steps 7,16] [--arch 90a-real]
#                               [--sweep-args "..."] [--no-torch] [--tests REGEX]
#                               [--sanitize-steps LIST] [--sass-tune-steps 7-16]
#
# --tune-steps LIST (default 7,16): the steps that get the 80 tune configs (--set tune) and
# the tune sweep of the results stage. FLASHSCOPE_BUILD_DIR overrides the build folder;
# FLASHSCOPE_SASS=OFF keeps the main build from recording SASS listings (it records them with
# this host's cuobjdump by default; the sass stage always does, in a build of its own).
# --no-torch skips the FA2 reference (libtorch makes configure and build slower).
# --tests REGEX runs only the ctest tests it matches; --sanitize-steps LIST (e.g. 16 or 13-16)
# sanitizes only those steps' picks. --sass-tune-steps LIST (default 7-16): the steps the sass
# stage also builds with every tune config, so that a neighbour step's picks exist there for
# same-config diffs (8 alone is the minimum CI's tests need: step 7's progression config at
# step 8, the seed's 7 -> 8 comparison; about 150 kernels instead of about 900).
# Stages: build (always), test (ctest: host + GPU tests), sweep (explorer --csv over the built
# kernels), sanitize (compute-sanitizer memcheck + racecheck at a small shape on each step's
# fp16 progression config and picks, plus synccheck on the Hopper steps 17+), sass (a build of
# its own for sm_80 and sm_90a with the CUDA 13 cuobjdump: the SASS artifact of every step's
# picks, exported to LOG_DIR/results/<gpu>/sass with a raw cuobjdump sample and checked by
# test_sass_artifact; commit it as results/<gpu>/sass), peak (explorer peak: the device's
# mma.sync, wgmma and HBM ceilings into LOG_DIR/peak.csv), results (the shipped dataset:
# progression + tune + peak, each also a stage of its own: the progression of every built step
# with the DRAM byte counts the roofline needs, the tune sweeps of --tune-steps and the
# ceilings, written to LOG_DIR with a manifest of device, driver, commit, date and each
# command and wall time). Header-only dependencies a
# GPU host lacks (CLI11, doctest) are read from .deps/include: fill it on a machine that has
# them with `scripts/vendor_header_deps.sh` and send it along with the tree.
set -euo pipefail

# Prints the comment block at the top of this file (everything before `set -euo pipefail`).
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
LOG_DIR=$(mkdir -p "$1" && cd "$1" && pwd)
shift
STAGES="build,test,sweep,sanitize,sass,peak"
KERNEL_SET="prog"
STEPS=""
ARCH="90a-real"  # Hopper's arch-specific target: steps 1-16 and the Hopper steps 17+
SWEEP_ARGS=""
WITH_TORCH=1
TUNE_STEPS="7,16"
TEST_REGEX=""
SANITIZE_STEPS=""
SASS_TUNE_STEPS="7-16"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --stages) STAGES="$2"; shift 2 ;;
    --set) KERNEL_SET="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --arch) ARCH="$2"; shift 2 ;;
    --sweep-args) SWEEP_ARGS="$2"; shift 2 ;;
    --no-torch) WITH_TORCH=0; shift ;;
    --tune-steps) TUNE_STEPS="$2"; shift 2 ;;
    --tests) TEST_REGEX="$2"; shift 2 ;;
    --sanitize-steps) SANITIZE_STEPS="$2"; shift 2 ;;
    --sass-tune-steps) SASS_TUNE_STEPS="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "gpu_host.sh: unknown option $1" >&2; usage ;;
  esac
done
STEP_LIST_RE='^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$'
if [[ -n $SANITIZE_STEPS && ! $SANITIZE_STEPS =~ $STEP_LIST_RE ]]; then
  echo "gpu_host.sh: --sanitize-steps '$SANITIZE_STEPS' is not a step list such as 16 or 7,13-16" >&2
  exit 2
fi
if [[ ! $SASS_TUNE_STEPS =~ $STEP_LIST_RE ]]; then
  echo "gpu_host.sh: --sass-tune-steps '$SASS_TUNE_STEPS' is not a step list such as 8 or 7-16" >&2
  exit 2
fi
has_stage() { [[ ",$STAGES," == *",$1,"* ]]; }
# in_step_list 14 "7,13-16": is the step in a list of numbers and ranges?
in_step_list() {
  local item
  for item in ${2//,/ }; do
    if [[ $item == *-* ]]; then
      (( $1 >= ${item%-*} && $1 <= ${item#*-} )) && return 0
    elif (( $1 == item )); then
      return 0
    fi
  done
  return 1
}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FLASHSCOPE_BUILD_DIR:-"$ROOT/build-gpu"}
JOBS=$(nproc)
SECONDS=0
log() { echo "[gpu_host $(printf '%4d' $SECONDS)s] $*" | tee -a "$LOG_DIR/summary.txt"; }

log "host: $(hostname), $JOBS cores; $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -1)"
CMAKE_ARGS=(-S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
            -DFLASHSCOPE_KERNEL_SET="$KERNEL_SET" -DFLASHSCOPE_STEPS="$STEPS"
            -DFLASHSCOPE_TUNE_STEPS="$TUNE_STEPS"
            -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DFLASHSCOPE_PTXAS_VERBOSE=ON
            -DFLASHSCOPE_SASS="${FLASHSCOPE_SASS:-AUTO}")
# An exported tree without .git names its commit through FLASHSCOPE_GIT_COMMIT.
[[ -n ${FLASHSCOPE_GIT_COMMIT:-} ]] && CMAKE_ARGS+=(-DFLASHSCOPE_GIT_COMMIT="$FLASHSCOPE_GIT_COMMIT")
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
  CTEST_ARGS=(--test-dir "$BUILD" --output-on-failure -j 1)
  [[ -n $TEST_REGEX ]] && CTEST_ARGS+=(-R "$TEST_REGEX")
  if ! ctest "${CTEST_ARGS[@]}" > "$LOG_DIR/ctest.log" 2>&1; then
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
  # Each step's progression config or picks, fp16, at a small shape (16 heads for steps 16-17,
  # whose GMEM row stride is compiled for 16). The Hopper steps' barriers also get synccheck.
  log "compute-sanitizer memcheck + racecheck (+ synccheck from step 17) on every step's fp16 progression config and picks (B=1, N=256)"
  : > "$LOG_DIR/sanitizer.log"
  while read -r step config; do
    heads=2
    [[ $step == 16 || $step == 17 ]] && heads=16
    tools="memcheck racecheck"
    (( step >= 17 )) && tools="$tools synccheck"
    for tool in $tools; do
      echo "=== $tool step $step $config" >> "$LOG_DIR/sanitizer.log"
      if ! compute-sanitizer --tool "$tool" --error-exitcode 9 "$EXPLORER" check --step "$step" \
          --config "$config" --batch 1 --heads "$heads" --seq-len 256 >> "$LOG_DIR/sanitizer.log" 2>&1; then
        echo "SANITIZER FAILURE: $tool step $step $config" | tee -a "$LOG_DIR/summary.txt"
        STATUS=1
      fi
    done
  done < <("$EXPLORER" --list-picks | grep -E "^[0-9]+ \(FP16, " | while read -r step config; do
    if [[ -z $SANITIZE_STEPS ]] || in_step_list "$step" "$SANITIZE_STEPS"; then
      echo "$step $config"
    fi
  done)
  # memcheck ends with "ERROR SUMMARY: N errors", racecheck with "RACECHECK SUMMARY: ... (N errors, ...)".
  CLEAN=$(grep -cE 'ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors' "$LOG_DIR/sanitizer.log")
  DIRTY=$(grep -cE 'ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: .*\([1-9][0-9]* errors' "$LOG_DIR/sanitizer.log")
  log "sanitizer: $CLEAN clean runs, $DIRTY with errors"
fi

# results = progression + tune + peak; each can run alone (a device call has a time limit).
if has_stage results; then STAGES="$STAGES,progression,tune,peak"; fi
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
# "NVIDIA H200" -> h200, "NVIDIA H100 80GB HBM3" -> h100: the results/<gpu> folder name.
GPU_FOLDER=$(echo "$GPU_NAME" | sed -E 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')
if has_stage progression || has_stage tune || has_stage results; then
  DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
  COMMIT=$("$EXPLORER" --version | awk '{print $2}')
  {
    echo "# Measured results"
    echo
    echo "| what | value |"
    echo "| --- | --- |"
    echo "| device | $GPU_NAME |"
    echo "| driver | $DRIVER |"
    echo "| CUDA (nvcc) | $(nvcc --version | grep -o 'release [0-9.]*' | head -1) |"
    echo "| commit | $COMMIT |"
    echo "| date (UTC) | $(date -u +%Y-%m-%dT%H:%M:%SZ) |"
  } > "$LOG_DIR/MANIFEST.md"
  # Runs one results sweep: NAME then explorer's arguments (without --output).
  results_sweep() {
    local name=$1 started=$SECONDS
    shift
    log "results: explorer $* --output $name.csv"
    "$EXPLORER" "$@" --output "$LOG_DIR/$name.csv" 2>> "$LOG_DIR/results.log" || STATUS=1
    log "results: $(($(wc -l < "$LOG_DIR/$name.csv") - 1)) $name rows in $((SECONDS - started)) s"
    echo "| $name.csv | \`explorer $*\` ($((SECONDS - started)) s) |" >> "$LOG_DIR/MANIFEST.md"
  }
  # The DRAM byte counts place every step on the roofline (docs/explorer.md, "Roofline").
  if has_stage progression; then
    results_sweep progression --csv --set prog --metrics dram__bytes_read.sum,dram__bytes_write.sum
  fi
  if has_stage tune; then
    results_sweep tune --csv --set tune --steps "$TUNE_STEPS" --seq-lens 1024,2048,4096,8192,16384
  fi
  if has_stage peak; then results_sweep peak peak; fi
elif has_stage peak; then
  log "peak: explorer peak --output peak.csv"
  "$EXPLORER" peak --output "$LOG_DIR/peak.csv" 2> "$LOG_DIR/peak.log" || STATUS=1
  tee -a "$LOG_DIR/summary.txt" < "$LOG_DIR/peak.log"
fi

# The SASS artifact needs a CUDA 13 cuobjdump (this host's) and both architectures, so it has a
# build of its own: every step's picks (set tune includes prog) plus the tune configs of
# --sass-tune-steps, of which the export keeps each step's picks and its neighbours' picks.
if has_stage sass; then
  SASS_BUILD=${FLASHSCOPE_SASS_BUILD_DIR:-"$ROOT/build-sass"}
  SASS_OUT="$LOG_DIR/results/$GPU_FOLDER/sass"
  log "sass: build (set tune, tune steps $SASS_TUNE_STEPS, 80-real;90a-real, FLASHSCOPE_SASS=ON)"
  SASS_ARGS=(-S "$ROOT" -B "$SASS_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
             -DFLASHSCOPE_KERNEL_SET=tune -DFLASHSCOPE_TUNE_STEPS="$SASS_TUNE_STEPS"
             -DCMAKE_CUDA_ARCHITECTURES="80-real;90a-real" -DFLASHSCOPE_SASS=ON
             -DFLASHSCOPE_BUILD_GUI=OFF)
  [[ -n ${FLASHSCOPE_GIT_COMMIT:-} ]] && SASS_ARGS+=(-DFLASHSCOPE_GIT_COMMIT="$FLASHSCOPE_GIT_COMMIT")
  if cmake "${SASS_ARGS[@]}" > "$LOG_DIR/sass.log" 2>&1 &&
     cmake --build "$SASS_BUILD" -j "$JOBS" --target flashscope_sass_artifact test_sass_artifact \
       >> "$LOG_DIR/sass.log" 2>&1; then
    "$SASS_BUILD/explorer/sass/flashscope-sass" export --from "$SASS_BUILD/sass" --to "$SASS_OUT" \
      --progression-only --manifest "made_on=$GPU_NAME ($(hostname))" >> "$LOG_DIR/sass.log" 2>&1
    # The disassembler's own output for one object (step 1, fp16): test_sass_artifact reads it
    # and the stored listings to the same instructions.
    mkdir -p "$SASS_OUT/raw"
    OBJECT=$(find "$SASS_BUILD/kernels" -name 's01_fp16_*.cu.o' | head -1)
    cuobjdump -sass "$OBJECT" | gzip -9 > "$SASS_OUT/raw/$(basename "$OBJECT" .cu.o).cuobjdump-sass.txt.gz"
    if "$SASS_BUILD/tests/sass/test_sass_artifact" --suite=shipped --results="$LOG_DIR/results" \
         >> "$LOG_DIR/sass.log" 2>&1 &&
       "$SASS_BUILD/tests/sass/test_sass_artifact" --suite=hopper --results="$LOG_DIR/results" \
         >> "$LOG_DIR/sass.log" 2>&1; then
      log "sass: $(du -sh "$SASS_OUT" | cut -f1) in $SASS_OUT; test_sass_artifact passed (copy it to results/$GPU_FOLDER/sass)"
    else
      log "sass: test_sass_artifact FAILED on $SASS_OUT (see sass.log)"
      STATUS=1
    fi
  else
    grep -E "error|FAILED" "$LOG_DIR/sass.log" | head -20 | tee -a "$LOG_DIR/summary.txt"
    STATUS=1
  fi
fi
log "done (status $STATUS)"
exit $STATUS
