#!/usr/bin/env bash
# End-to-end run on a GPU host: configure and build with every core, run the tests (GPU tests
# included), then the stages asked for, writing every log under LOG_DIR.
#
#   scripts/gpu_host.sh LOG_DIR [--stages build,check,test,sweep,sanitize,sass,results,devices]
#                               [--set prog]
#                               [--steps 1-21] [--tune-steps 7,16] [--arch 90a-real]
#                               [--sweep-args "..."] [--no-torch] [--tests REGEX]
#                               [--sanitize-steps LIST] [--check-steps LIST]
#
# --tune-steps LIST (default 7,16): the steps that get the 80 tune configs (--set tune) and
# the tune sweep of the results stage. FLASHSCOPE_BUILD_DIR overrides the build folder.
# --no-torch skips the FA2 reference (libtorch makes configure and build slower).
# --tests REGEX runs only the ctest tests it matches; --sanitize-steps LIST (e.g. 16 or 13-16)
# sanitizes only those steps' picks.
# Stages: build (always), check (explorer check on every built kernel of --check-steps, default
# all, both dtypes, at B=2 N=1024 H=16, each in its own process under a 30 s timeout: a hang or fault is
# reported for that kernel and the GPU tests are then skipped with the reason instead of hanging),
# test (ctest: host + GPU tests), sweep (explorer --csv over the built
# kernels), sanitize (compute-sanitizer memcheck + racecheck at a small shape on each step's
# fp16 progression config and picks, plus synccheck on the Hopper steps 17+), sass (per-kernel
# SASS instruction counts from
# cuobjdump), results (the shipped
# dataset: progression + tune, each also a stage of its own: the progression of every built
# step, and the tune sweeps of --tune-steps, written to LOG_DIR with a manifest of device,
# driver, commit, date and each sweep's command and wall time), devices (issue 15's benchmark,
# on a host with 2 or more GPUs: the prog sweep with --devices 0, then the same plan and seed
# with --devices all; prints each run's rows/s, the speed-up, and the row-by-row comparison of
# TFLOP/s from `explorer compare`; files devices_0.csv, devices_all.csv and their logs; not part
# of the default stages). Header-only dependencies a
# GPU host lacks (CLI11, doctest) are read from .deps/include: fill it on a machine that has
# them with `scripts/vendor_header_deps.sh` and send it along with the tree.
set -euo pipefail

# Prints the comment block at the top of this file (everything before `set -euo pipefail`).
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
LOG_DIR=$(mkdir -p "$1" && cd "$1" && pwd)
shift
STAGES="build,test,sweep,sanitize,sass"
KERNEL_SET="prog"
STEPS=""
ARCH="90a-real"  # Hopper's arch-specific target: steps 1-16 and the Hopper steps 17+
SWEEP_ARGS=""
WITH_TORCH=1
TUNE_STEPS="7,16"
TEST_REGEX=""
SANITIZE_STEPS=""
CHECK_STEPS=""
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
    --check-steps) CHECK_STEPS="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "gpu_host.sh: unknown option $1" >&2; usage ;;
  esac
done
STEP_LIST_RE='^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$'
for list in "$SANITIZE_STEPS" "$CHECK_STEPS"; do
  if [[ -n $list && ! $list =~ $STEP_LIST_RE ]]; then
    echo "gpu_host.sh: '$list' (--sanitize-steps / --check-steps) is not a step list such as 16 or 7,13-16" >&2
    exit 2
  fi
done
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
            -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DFLASHSCOPE_PTXAS_VERBOSE=ON)
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
KERNELS_HANG=0
if has_stage check; then
  # One process per kernel and shape, so a hang (a barrier phase mistake) or a fault costs that
  # kernel only. Step 16-17 kernels are compiled for 16 heads.
  log "check: explorer check per built kernel (steps ${CHECK_STEPS:-all}), 30 s timeout each"
  : > "$LOG_DIR/check.log"
  declare -A CHECK_COUNT=([pass]=0 [fail]=0 [timeout]=0 [error]=0)
  while read -r step config; do
    if [[ -n $CHECK_STEPS ]] && ! in_step_list "$step" "$CHECK_STEPS"; then continue; fi
    for seq_len in 1024; do
      rc=0
      timeout 30 "$EXPLORER" check --step "$step" --config "$config" --batch 2 --heads 16 \
        --seq-len "$seq_len" >> "$LOG_DIR/check.log" 2>&1 || rc=$?
      case $rc in
        0) verdict=pass ;;
        1) verdict=fail ;;
        124) verdict=timeout; KERNELS_HANG=1 ;;
        *) verdict=error ;;
      esac
      CHECK_COUNT[$verdict]=$((CHECK_COUNT[$verdict] + 1))
      echo "check $verdict (rc $rc): step $step N=$seq_len $config" | tee -a "$LOG_DIR/check.log" >> "$LOG_DIR/summary.txt"
      [[ $verdict == pass ]] || STATUS=1
    done
  done < <("$EXPLORER" --list)
  log "check: ${CHECK_COUNT[pass]} pass, ${CHECK_COUNT[fail]} fail, ${CHECK_COUNT[timeout]} timeout, ${CHECK_COUNT[error]} error"
fi

if has_stage test; then
  log "ctest"
  CTEST_ARGS=(--test-dir "$BUILD" --output-on-failure -j 1)
  [[ -n $TEST_REGEX ]] && CTEST_ARGS+=(-R "$TEST_REGEX")
  if [[ $KERNELS_HANG == 1 ]]; then
    log "ctest: test_kernels_gpu skipped: a kernel timed out in the check stage (see check.log)"
    CTEST_ARGS+=(-E test_kernels_gpu)
  fi
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
  CLEAN=$(grep -cE 'ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors' "$LOG_DIR/sanitizer.log" || true)
  DIRTY=$(grep -cE 'ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: .*\([1-9][0-9]* errors' "$LOG_DIR/sanitizer.log" || true)
  log "sanitizer: $CLEAN clean runs, $DIRTY with errors"
fi

# results = progression + tune; each can run alone (a device call has a time limit).
if has_stage results; then STAGES="$STAGES,progression,tune"; fi
if has_stage progression || has_stage tune; then
  GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
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
  if has_stage progression; then results_sweep progression --csv --set prog; fi
  if has_stage tune; then
    results_sweep tune --csv --set tune --steps "$TUNE_STEPS" --seq-lens 1024,2048,4096,8192,16384
  fi
fi

if has_stage devices; then
  GPU_COUNT=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  if (( GPU_COUNT < 2 )); then
    log "devices: this host has $GPU_COUNT GPU(s); the multi-GPU benchmark needs at least 2 (skipped)"
  else
    # One seed for both runs: the same inputs, so only the device spread differs.
    for devices in 0 all; do
      log "devices: explorer --csv --set prog --devices $devices --seed 15 $SWEEP_ARGS"
      # shellcheck disable=SC2086
      "$EXPLORER" --csv --set prog --devices "$devices" --seed 15 $SWEEP_ARGS \
        --output "$LOG_DIR/devices_$devices.csv" 2> "$LOG_DIR/devices_$devices.log" || STATUS=1
      log "devices $devices: $(grep '^sweep: ' "$LOG_DIR/devices_$devices.log" || echo 'no summary line')"
      grep -E '^  GPU [0-9]+ ' "$LOG_DIR/devices_$devices.log" | tee -a "$LOG_DIR/summary.txt" || true
    done
    rows_per_second() { grep '^sweep: ' "$1" | grep -oE '[0-9.]+ rows/s' | awk '{print $1}'; }
    ONE=$(rows_per_second "$LOG_DIR/devices_0.log")
    ALL=$(rows_per_second "$LOG_DIR/devices_all.log")
    if [[ -n $ONE && -n $ALL ]]; then
      log "devices: $ALL rows/s on $GPU_COUNT GPUs vs $ONE rows/s on GPU 0: $(awk -v a="$ALL" -v b="$ONE" \
        'BEGIN { r = a / b; printf "%.2fx (issue 15 target >= 1.8x: %s)", r, r >= 1.8 ? "met" : "NOT met" }')"
    fi
    # The same rows, and per-row TFLOP/s within 2 % (median |all / one - 1|), per GPU of the second.
    if "$EXPLORER" compare "$LOG_DIR/devices_0.csv" "$LOG_DIR/devices_all.csv" --same-rows \
        --max-median-diff 2 > "$LOG_DIR/devices_compare.txt" 2>&1; then
      VERDICT="met"
    else
      VERDICT="NOT met"
    fi
    sed 's/^/  /' "$LOG_DIR/devices_compare.txt" | tee -a "$LOG_DIR/summary.txt"
    log "devices: same rows and median per-row TFLOP/s difference <= 2 %: $VERDICT"
  fi
fi

if has_stage sass; then
  log "SASS instruction counts"
  "$ROOT/scripts/sass_counts.sh" "$BUILD" > "$LOG_DIR/sass.txt" 2>&1 || true
fi
log "done (status $STATUS)"
exit $STATUS
