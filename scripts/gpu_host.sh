#!/usr/bin/env bash
# End-to-end run on a GPU host: configure and build with every core, run the tests (GPU tests
# included), then the stages asked for, writing every log under LOG_DIR.
#
#   scripts/gpu_host.sh LOG_DIR [--stages build,check,test,python,sweep,sanitize,sass,peak,results,devices,gui]
#                               [--set prog] [--steps 1-21] [--tune-steps 7,16] [--arch 90a-real]
#                               [--sweep-args "..."] [--no-torch] [--tests REGEX]
#                               [--sanitize-steps LIST] [--check-steps LIST] [--lock-sm-clock MHZ]
#                               [--sass-tune-steps 7-16] [--sass-steps LIST] [--sass-base DIR]
#                               [--gui-tests REGEX]
#
# --tune-steps LIST (default 7,16): the steps that get the 80 tune configs (--set tune) and
# the tune sweep of the results stage. FLASHSCOPE_BUILD_DIR overrides the build folder;
# FLASHSCOPE_SASS=OFF keeps the main build from recording SASS listings (it records them with
# this host's cuobjdump by default; the sass stage always does, in a build of its own).
# --no-torch skips the FA2 reference (libtorch makes configure and build slower).
# --tests REGEX runs only the ctest tests it matches; --sanitize-steps LIST (e.g. 16 or 13-16)
# sanitizes only those steps, every config of theirs that the build has. --sass-tune-steps LIST (default 7-16): the steps the sass
# stage also builds with every tune config, so that a neighbour step's picks exist there for
# same-config diffs (8 alone is the minimum CI's tests need: step 7's progression config at
# step 8, the seed's 7 -> 8 comparison; about 150 kernels instead of about 900).
# --sass-steps LIST (default all) builds only those steps in the sass stage, and --sass-base DIR
# (a shipped artifact, e.g. results/h100/sass) is what that partial export is merged into with
# `flashscope-sass merge` (the steps built replace the base's, the others are kept, the manifest's
# part.N lines say which commit, toolkit and host made which steps, and overlap_check compares
# any step both have instruction by instruction); test_sass_artifact (its shipped, hopper and
# coverage suites) then checks the merged artifact. A partial export without --sass-base is left
# unchecked (its steps alone do not hold the seed's 7 -> 8 comparison), and the summary says so.
# --lock-sm-clock MHZ (off by default; needs root, and hosts you may not reconfigure, such as
# lent machines, must not be given it): lock every GPU's SM clock at MHZ with
# `nvidia-smi -lgc MHZ,MHZ` before the sweeps and restore it with `nvidia-smi -rgc` when the
# script ends, however it ends. Every sweep then records the lock (--locked-sm-clock) and flags
# rows measured more than 3 % away from it. When the driver refuses, the summary says
# "locked clocks NOT permitted" and the sweeps run at the card's default clocks, recorded as such.
# The test stage runs ctest with FLASHSCOPE_REQUIRE_GPU=1 on a host whose driver lists a GPU, so a
# broken driver fails the GPU tests instead of skipping them, and lists every skipped test with
# its reason; a GPU test skipped for want of a device fails the script.
# Stages: build (always), check (explorer check on every built kernel of --check-steps, default
# all, both dtypes, at B=2 N=1024 H=16, with and without the causal mask where the kernel has it,
# each in its own process under a 30 s timeout: a hang or
# fault is reported for that kernel and test_kernels_gpu is then skipped with the reason instead
# of hanging), test (ctest: host + GPU tests), python (the Python module's pytest suite,
# tests/python, with the interpreter the build found: every built kernel against PyTorch SDPA,
# CuPy and JAX inputs, streams, forward_timed against the explorer; pytest.log, and a GPU test
# skipped for want of a device fails the stage as in ctest; needs pybind11 and pytest in that
# python3, and PyTorch for the GPU tests), sweep (explorer --csv over the built kernels),
# clocks (steps 9 and 16 against FA2 at N = 4096 by time, by cycles and by CUPTI duration, with
# the SM clocks and the reference drift: clocks.csv, and clocks-locked.csv under
# --lock-sm-clock), counters (the hardware counters of docs/versions' profiles for every step's
# configs at N = 4096: counters.csv, read by `explorer report` as counters-NN blocks), sanitize
# (compute-sanitizer memcheck + racecheck at a small shape on each step's progression config and
# picks, or with --sanitize-steps on every built config of those steps, in each dtype e4m3
# included, with and without the causal mask where the kernel has it, and with 8 query heads on
# 2 K/V heads where it takes grouped K/V, a persistent kernel also with its grid capped at 2
# CTAs (explorer check --persistent-ctas 2, N = 640: several tiles on each CTA), plus synccheck
# on the Hopper steps 17+; SANITIZE_JOBS
# runs at a time, default 8, logs joined in sanitizer.log), sass (a build of its own for sm_80
# and sm_90a with the CUDA 13 cuobjdump: the SASS artifact of every step's picks, exported to
# LOG_DIR/results/<gpu>/sass with a raw cuobjdump sample and checked by test_sass_artifact;
# commit it as results/<gpu>/sass), peak (explorer peak: the device's mma.sync, wgmma, HBM, ex2
# and shared-memory ceilings into LOG_DIR/peak.csv), results (the shipped dataset: progression + tune + peak, each
# also a stage of its own: the progression of every built step with the DRAM byte counts the
# roofline needs, the tune sweeps of --tune-steps and the ceilings, written to LOG_DIR with a
# manifest of device, driver, host, clocks, commit, date and each command and wall time),
# devices (issue 15's benchmark, on a host with 2 or more GPUs: the prog sweep with --devices 0,
# then the same plan and seed with --devices all; prints each run's rows/s, the speed-up, and the
# row-by-row comparison of TFLOP/s from `explorer compare`; files devices_0.csv, devices_all.csv
# and their logs; not part of the default stages), gui (the explorer GUI live on a headless host,
# not part of the default stages: the runtime that scripts/fetch_gui_runtime.sh fetched into
# .gui-runtime — carry it along — is set up by scripts/gui_runtime_env.sh before the configure,
# so the build has the GUI; then Xvfb, a probe that prints which OpenGL draws (NVIDIA's GLX, else
# Mesa's llvmpipe as a fallback, said so in the summary), and ctest's explorer_gui_* tests with
# FLASHSCOPE_REQUIRE_GPU=1 (--gui-tests REGEX runs only those it matches, default all of
# ^explorer_gui_): explorer_gui_run_sweep runs step 25 from the run panel and checks
# its progress bar and live rows; gui.log, xvfb-N.log, gui-ctest.log, gui-run-sweep.png,
# gui-probe.png and every screenshot in gui-screenshots.tar.gz). Header-only dependencies a GPU host lacks (CLI11, doctest) are read from .deps/include: fill it
# on a machine that has them with `scripts/vendor_header_deps.sh` and send it along with the tree.
set -euo pipefail

# Prints the comment block at the top of this file (everything before `set -euo pipefail`).
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
LOG_DIR=$(mkdir -p "$1" && cd "$1" && pwd)
shift
STAGES="build,test,python,sweep,sanitize,sass,peak"
KERNEL_SET="prog"
STEPS=""
ARCH="90a-real"  # Hopper's arch-specific target: steps 1-16 and the Hopper steps 17+
SWEEP_ARGS=""
WITH_TORCH=1
TUNE_STEPS="7,16"
TEST_REGEX=""
GUI_TEST_REGEX="^explorer_gui_"
SANITIZE_STEPS=""
SASS_TUNE_STEPS="7-16"
SASS_STEPS=""
SASS_BASE=""
CHECK_STEPS=""
LOCK_SM_CLOCK=""
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
    --gui-tests) GUI_TEST_REGEX="$2"; shift 2 ;;
    --sanitize-steps) SANITIZE_STEPS="$2"; shift 2 ;;
    --sass-tune-steps) SASS_TUNE_STEPS="$2"; shift 2 ;;
    --sass-steps) SASS_STEPS="$2"; shift 2 ;;
    --sass-base) SASS_BASE="$2"; shift 2 ;;
    --check-steps) CHECK_STEPS="$2"; shift 2 ;;
    --lock-sm-clock) LOCK_SM_CLOCK="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "gpu_host.sh: unknown option $1" >&2; usage ;;
  esac
done
STEP_LIST_RE='^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$'
for list in "$SANITIZE_STEPS" "$CHECK_STEPS" "$SASS_STEPS"; do
  if [[ -n $list && ! $list =~ $STEP_LIST_RE ]]; then
    echo "gpu_host.sh: '$list' (--sanitize-steps / --check-steps / --sass-steps) is not a step list such as 16 or 7,13-16" >&2
    exit 2
  fi
done
if [[ -n $LOCK_SM_CLOCK && ! $LOCK_SM_CLOCK =~ ^[1-9][0-9]*$ ]]; then
  echo "gpu_host.sh: --lock-sm-clock '$LOCK_SM_CLOCK' is not a clock in MHz such as 1500" >&2
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
if [[ -n $SASS_BASE ]]; then
  [[ $SASS_BASE == /* ]] || SASS_BASE="$ROOT/$SASS_BASE"
  if [[ ! -f $SASS_BASE/manifest.txt ]]; then
    echo "gpu_host.sh: --sass-base '$SASS_BASE' is no SASS artifact (no manifest.txt)" >&2
    exit 2
  fi
fi
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
# FLASHSCOPE_GIT_DIRTY=true|false says whether that tree differs from the commit (else unknown).
[[ -n ${FLASHSCOPE_GIT_COMMIT:-} ]] && CMAKE_ARGS+=(-DFLASHSCOPE_GIT_COMMIT="$FLASHSCOPE_GIT_COMMIT")
[[ -n ${FLASHSCOPE_GIT_DIRTY:-} ]] && CMAKE_ARGS+=(-DFLASHSCOPE_GIT_DIRTY="$FLASHSCOPE_GIT_DIRTY")
if [[ $WITH_TORCH == 1 ]] && TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null); then
  CMAKE_ARGS+=(-DCMAKE_PREFIX_PATH="$TORCH_PREFIX")
fi

# gui stage, part 1: the carried GUI runtime, set up before the configure so that CMake finds
# GLFW, ImGui, stb and OpenGL in its prefix and the build has the GUI (part 2 is at the end).
GUI_SETUP=skipped
if has_stage gui; then
  export FLASHSCOPE_GUI_LOG_DIR="$LOG_DIR"
  # shellcheck source=scripts/gui_runtime_env.sh
  if source "$ROOT/scripts/gui_runtime_env.sh" --no-xvfb 2>> "$LOG_DIR/gui.log"; then
    GUI_SETUP=ok
  else
    GUI_SETUP=failed
  fi
  log "gui: runtime setup $GUI_SETUP (gui.log):"
  sed 's/^/  /' "$LOG_DIR/gui.log" | tee -a "$LOG_DIR/summary.txt"
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
    # Kernels with the causal mask (steps 23+) are checked with it too; the others refuse it
    # ("has no causal mask"), which is not a failure.
    # e4m3 kernels are judged against fp8-track.md §2's CPU references (fp64, batch x heads x N² x
    # d_head): one sample of two heads keeps them within the timeout.
    shape=(--batch 2 --heads 16)
    [[ $config == "(E4M3"* ]] && shape=(--batch 1 --heads 2)
    for mask in "" --causal; do
      seq_len=1024
      rc=0
      out=$(timeout 30 "$EXPLORER" check --step "$step" --config "$config" "${shape[@]}" \
        --seq-len "$seq_len" $mask 2>&1) || rc=$?
      echo "$out" >> "$LOG_DIR/check.log"
      if [[ -n $mask && $rc -eq 2 && $out == *"has no causal mask"* ]]; then continue; fi
      case $rc in
        0) verdict=pass ;;
        1) verdict=fail ;;
        124) verdict=timeout; KERNELS_HANG=1 ;;
        *) verdict=error ;;
      esac
      CHECK_COUNT[$verdict]=$((CHECK_COUNT[$verdict] + 1))
      echo "check $verdict (rc $rc): step $step N=$seq_len $config${mask:+ causal}" | tee -a "$LOG_DIR/check.log" >> "$LOG_DIR/summary.txt"
      [[ $verdict == pass ]] || STATUS=1
    done
  done < <("$EXPLORER" --list)
  log "check: ${CHECK_COUNT[pass]} pass, ${CHECK_COUNT[fail]} fail, ${CHECK_COUNT[timeout]} timeout, ${CHECK_COUNT[error]} error"
fi

if has_stage test; then
  log "ctest"
  CTEST_ARGS=(--test-dir "$BUILD" --output-on-failure -j 1)
  [[ -n $TEST_REGEX ]] && CTEST_ARGS+=(-R "$TEST_REGEX")
  # adding_a_step rebuilds a copy of the repository to check a doc (docs/adding-a-step.md): a
  # host-side check CI runs, not worth a GPU host's time.
  EXCLUDE="adding_a_step"
  if [[ $KERNELS_HANG == 1 ]]; then
    log "ctest: test_kernels_gpu skipped: a kernel timed out in the check stage (see check.log)"
    EXCLUDE+="|test_kernels_gpu"
  fi
  CTEST_ARGS+=(-E "$EXCLUDE")
  # On a host whose driver lists a GPU, a GPU test that finds no usable device fails (a broken
  # driver must not pass as "skipped": tests/support/gpu_presence.hpp).
  GPU_LISTED=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  if [[ $GPU_LISTED -gt 0 ]]; then
    export FLASHSCOPE_REQUIRE_GPU=1
  else
    log "WARNING: nvidia-smi lists no GPU; GPU tests will be skipped"
  fi
  if ! ctest "${CTEST_ARGS[@]}" > "$LOG_DIR/ctest.log" 2>&1; then
    STATUS=1
  fi
  tail -15 "$LOG_DIR/ctest.log" | tee -a "$LOG_DIR/summary.txt"
  # Every skipped test with its reason ("SKIPPED: ..." lines of each test's output), once per
  # test and reason: each test case of a skipped test prints the same line.
  LAST_TEST_LOG="$BUILD/Testing/Temporary/LastTest.log"
  if [[ -f $LAST_TEST_LOG ]]; then
    awk '/^[0-9]+\/[0-9]+ Testing: /{name=$3} /^SKIPPED: /{line = "skipped " name ": " substr($0, 10); if (!seen[line]++) print line}' \
      "$LAST_TEST_LOG" > "$LOG_DIR/skipped.txt"
    if [[ -s $LOG_DIR/skipped.txt ]]; then
      log "skipped tests:"
      tee -a "$LOG_DIR/summary.txt" < "$LOG_DIR/skipped.txt"
    fi
    if [[ $GPU_LISTED -gt 0 ]] && grep -q "no CUDA device" "$LOG_DIR/skipped.txt"; then
      log "FAILURE: GPU tests were skipped for want of a device on a host with $GPU_LISTED GPU(s)"
      STATUS=1
    fi
  fi
fi

if has_stage python; then
  # The module is <build>/python/flashscope, built for the interpreter CMake found.
  PYTHON=$(sed -n 's/^FLASHSCOPE_PYTHON_EXECUTABLE:INTERNAL=//p' "$BUILD/CMakeCache.txt" | head -1)
  if ! compgen -G "$BUILD/python/flashscope/_core*.so" > /dev/null; then
    log "python: the module was not built: $(grep -m1 'Python module' "$LOG_DIR/build.log" || echo 'no configure message')"
    STATUS=1
  elif ! "$PYTHON" -c "import pytest" 2> /dev/null; then
    log "python: $PYTHON has no pytest; tests/python did not run"
    STATUS=1
  else
    log "python: $PYTHON -m pytest tests/python (PYTHONPATH=$BUILD/python)"
    PYTEST_ENV=(PYTHONPATH="$BUILD/python" FLASHSCOPE_EXPLORER="$EXPLORER")
    if [[ $(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true) -gt 0 ]]; then
      PYTEST_ENV+=(FLASHSCOPE_REQUIRE_GPU=1)
    fi
    env "${PYTEST_ENV[@]}" "$PYTHON" -m pytest "$ROOT/tests/python" -v -s -rs -p no:cacheprovider \
      > "$LOG_DIR/pytest.log" 2>&1 || STATUS=1
    # The skip reasons, then pytest's summary line, and forward_timed against the explorer.
    grep -E '^SKIPPED' "$LOG_DIR/pytest.log" | tee -a "$LOG_DIR/summary.txt" || true
    grep -E 'forward_timed .* ms, explorer' "$LOG_DIR/pytest.log" | tee -a "$LOG_DIR/summary.txt" || true
    tail -1 "$LOG_DIR/pytest.log" | tee -a "$LOG_DIR/summary.txt"
  fi
fi

# Locked clocks (opt-in): lock before the sweeps, restore on every exit path.
LOCKED_ARGS=()
CLOCK_NOTE="default clocks (not locked)"
if [[ -n $LOCK_SM_CLOCK ]] && { has_stage sweep || has_stage results || has_stage progression \
     || has_stage tune || has_stage clocks || has_stage counters; }; then
  if LOCK_OUTPUT=$(nvidia-smi -lgc "$LOCK_SM_CLOCK,$LOCK_SM_CLOCK" 2>&1); then
    trap 'nvidia-smi -rgc > /dev/null 2>&1 && echo "[gpu_host] SM clocks restored (nvidia-smi -rgc)" | tee -a "$LOG_DIR/summary.txt"' EXIT
    LOCKED_ARGS=(--locked-sm-clock "$LOCK_SM_CLOCK")
    CLOCK_NOTE="SM clock locked at $LOCK_SM_CLOCK MHz (nvidia-smi -lgc), restored afterwards"
    log "clocks: $CLOCK_NOTE"
  else
    CLOCK_NOTE="default clocks: locked clocks NOT permitted on this host"
    log "clocks: locked clocks NOT permitted on this host (nvidia-smi -lgc $LOCK_SM_CLOCK,$LOCK_SM_CLOCK: $(echo "$LOCK_OUTPUT" | tr '\n' ' ')); sweeps run at the card's default clocks and their rows say so"
  fi
fi

if has_stage sweep; then
  log "sweep: explorer --csv $SWEEP_ARGS"
  # shellcheck disable=SC2086
  "$EXPLORER" --csv --output "$LOG_DIR/sweep.csv" "${LOCKED_ARGS[@]}" $SWEEP_ARGS \
    2> "$LOG_DIR/sweep.log" || STATUS=1
  # The sweep's last lines: its row count, then the reference drift per reference and dtype.
  sed -n '/^sweep: /,$p' "$LOG_DIR/sweep.log" | tee -a "$LOG_DIR/summary.txt"
fi

if has_stage sanitize && "$EXPLORER" check --help > /dev/null 2>&1; then
  # Every built kernel of the chosen steps (--sanitize-steps, default all: with all the steps that
  # is their picks only, as a full build lists every tune config too), in every dtype it is built
  # for (e4m3 included), at a small shape (16 heads for steps 16-17, whose GMEM row stride is
  # compiled for 16). Each kernel runs unmasked, with the causal mask where it has one, with
  # grouped K/V heads (8 query heads on 2 K/V heads) where it takes them, masked and not, and, if
  # it is persistent, with its grid capped at 2 CTAs (several tiles on each). The
  # Hopper steps' barriers also get synccheck. The runs are independent processes on one GPU, so
  # they run SANITIZE_JOBS at a time (default 8), each into its own log, joined in order after.
  if [[ -n $SANITIZE_STEPS ]]; then
    WHAT="every built config of steps $SANITIZE_STEPS"
  else
    WHAT="every step's progression config and picks"
  fi
  log "compute-sanitizer memcheck + racecheck (+ synccheck from step 17) on $WHAT, each dtype, causal and grouped K/V where the kernel has them (B=1, N=256 and 384), ${SANITIZE_JOBS:-8} at a time"
  : > "$LOG_DIR/sanitizer.log"
  SANITIZE_DIR="$LOG_DIR/sanitizer"
  rm -rf "$SANITIZE_DIR" && mkdir -p "$SANITIZE_DIR"
  # Asks the explorer (a small check, no sanitizer) whether a kernel takes ARGS; it names the rule
  # when it does not ("has no causal mask", "runs multi-head attention only").
  # The output is captured before it is searched: under pipefail, `check | grep -q` would take the
  # refused check's own non-zero status for the pipeline's and call every kernel willing.
  kernel_takes() {
    local step=$1 config=$2 refusal=$3 output
    shift 3
    output=$("$EXPLORER" check --step "$step" --config "$config" --batch 1 "$@" 2>&1) || true
    [[ $output != *"$refusal"* ]]
  }
  if [[ -n $SANITIZE_STEPS ]]; then LIST_OPTION=--list; else LIST_OPTION=--list-picks; fi
  JOB=0
  while read -r step config; do
    heads=2
    [[ $step == 16 || $step == 17 ]] && heads=16
    tools="memcheck racecheck"
    (( step >= 17 )) && tools="$tools synccheck"
    # "label|arguments": the unmasked run at N = 256; masked runs at N = 384 (three query blocks,
    # so the diagonal, the skipped blocks and the unmasked ones all occur).
    variants=("|--heads $heads --seq-len 256")
    masked=0
    if kernel_takes "$step" "$config" "has no causal mask" --heads "$heads" --seq-len 128 --causal; then
      masked=1
      variants+=("causal|--heads $heads --seq-len 384 --causal")
    fi
    if kernel_takes "$step" "$config" "multi-head attention only" --heads 8 --heads-kv 2 --seq-len 128; then
      variants+=("heads 8 on 2 K/V heads|--heads 8 --heads-kv 2 --seq-len 256")
      ((masked)) && variants+=("heads 8 on 2 K/V heads causal|--heads 8 --heads-kv 2 --seq-len 384 --causal")
    fi
    # A persistent kernel (its folder sizes the grid by the tile scheduler's SM count) at these
    # shapes gives each CTA one tile at most; capped at 2 CTAs, each runs several (N = 640: 4-5
    # query tiles or KV blocks a head), so its later tiles' ring phases and reused shared memory
    # are checked too.
    folder=$(printf 'v%02d' "$step")
    ((step > 100)) && folder=$(printf 'b%02d' $((step - 100)))
    if grep -rqs current_device_sm_count "$ROOT/kernels/versions/$folder"; then
      if ((masked)); then
        variants+=("several tiles a CTA|--heads $heads --seq-len 640 --causal --persistent-ctas 2")
      else
        variants+=("several tiles a CTA|--heads $heads --seq-len 640 --persistent-ctas 2")
      fi
    fi
    for tool in $tools; do
      for variant in "${variants[@]}"; do
        JOB=$((JOB + 1))
        # One job per line: its log's number, then the fields ('|'-separated: configs hold spaces,
        # and a label may be empty, which a whitespace separator would swallow).
        printf '%05d|%s|%s|%s|%s|%s\n' "$JOB" "$tool" "$step" "$config" "${variant%%|*}" \
          "${variant#*|}"
      done
    done
  done < <("$EXPLORER" $LIST_OPTION | grep -E "^[0-9]+ \((FP16|BF16|E4M3), " | while read -r step config; do
    if [[ -z $SANITIZE_STEPS ]] || in_step_list "$step" "$SANITIZE_STEPS"; then
      echo "$step $config"
    fi
  done) > "$SANITIZE_DIR/jobs.txt"
  # Runs one job line; a failure is written into the job's log and its .failed marker.
  sanitize_job() {
    local number tool step config label arguments
    IFS='|' read -r number tool step config label arguments <<< "$1"
    read -r -a arguments <<< "$arguments"
    {
      echo "=== $tool step $step $config${label:+ $label}"
      if ! compute-sanitizer --tool "$tool" --error-exitcode 9 "$EXPLORER" check --step "$step" \
          --config "$config" --batch 1 "${arguments[@]}" 2>&1; then
        echo "SANITIZER FAILURE: $tool step $step $config${label:+ $label}" \
          | tee "$SANITIZE_DIR/$number.failed"
      fi
    } > "$SANITIZE_DIR/$number.log"
  }
  export -f sanitize_job
  export EXPLORER SANITIZE_DIR
  tr '\n' '\0' < "$SANITIZE_DIR/jobs.txt" \
    | xargs -0 -r -P "${SANITIZE_JOBS:-8}" -I{} bash -c 'sanitize_job "$1"' _ {} || true
  cat "$SANITIZE_DIR"/[0-9]*.log >> "$LOG_DIR/sanitizer.log" 2> /dev/null || true
  if compgen -G "$SANITIZE_DIR/*.failed" > /dev/null; then
    cat "$SANITIZE_DIR"/*.failed >> "$LOG_DIR/summary.txt"
    STATUS=1
  fi
  # memcheck ends with "ERROR SUMMARY: N errors", racecheck with "RACECHECK SUMMARY: ... (N errors, ...)".
  CLEAN=$(grep -cE 'ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors' "$LOG_DIR/sanitizer.log" || true)
  DIRTY=$(grep -cE 'ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: .*\([1-9][0-9]* errors' "$LOG_DIR/sanitizer.log" || true)
  log "sanitizer: $(wc -l < "$SANITIZE_DIR/jobs.txt") runs, $CLEAN clean, $DIRTY with errors"
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
    echo "| host | $(hostname) |"
    echo "| clocks | $CLOCK_NOTE |"
  } > "$LOG_DIR/MANIFEST.md"
  # Runs one results sweep: NAME then explorer's arguments (without --output).
  results_sweep() {
    local name=$1 started=$SECONDS
    shift
    log "results: explorer $* ${LOCKED_ARGS[*]} --output $name.csv"
    "$EXPLORER" "$@" "${LOCKED_ARGS[@]}" --output "$LOG_DIR/$name.csv" 2> "$LOG_DIR/$name.log" \
      || STATUS=1
    cat "$LOG_DIR/$name.log" >> "$LOG_DIR/results.log"
    # A sweep that did not finish leaves its rows in $name.csv.partial (docs/profiling.md).
    if [[ -f $LOG_DIR/$name.csv ]]; then
      log "results: $(($(wc -l < "$LOG_DIR/$name.csv") - 1)) $name rows in $((SECONDS - started)) s"
    elif [[ -f $LOG_DIR/$name.csv.partial ]]; then
      log "results: $name did not finish: $(($(wc -l < "$LOG_DIR/$name.csv.partial") - 1)) rows in $name.csv.partial"
    else
      log "results: $name wrote no rows (see $name.log)"
    fi
    sed -n '/^sweep: /,$p' "$LOG_DIR/$name.log" | tee -a "$LOG_DIR/summary.txt"
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
  log "peak: explorer peak ${LOCKED_ARGS[*]} --output peak.csv"
  "$EXPLORER" peak "${LOCKED_ARGS[@]}" --output "$LOG_DIR/peak.csv" 2> "$LOG_DIR/peak.log" \
    || STATUS=1
  tee -a "$LOG_DIR/summary.txt" < "$LOG_DIR/peak.log"
fi

# Step 9 (the fastest step) and step 16 (the last Ampere-instruction step) against FA2 at
# N = 4096, three ways: event medians (each row at its own clock), cycles (clock-free) and the
# profiled launches' CUPTI durations, with the SM clocks and the references' drift over the
# sweep. At the card's default clocks; again at the locked clock when --lock-sm-clock worked.
if has_stage clocks; then
  clocks_sweep() {
    local name=$1 started=$SECONDS
    shift
    log "clocks: explorer --csv --set prog --steps 9,16 --seq-lens 4096 $* --output $name.csv"
    "$EXPLORER" --csv --set prog --steps 9,16 --seq-lens 4096 "$@" \
      --output "$LOG_DIR/$name.csv" 2> "$LOG_DIR/$name.log" || STATUS=1
    log "clocks: $name.csv in $((SECONDS - started)) s"
    sed -n '/^sweep: /,$p' "$LOG_DIR/$name.log" | tee -a "$LOG_DIR/summary.txt"
    for block in vs-fa2-16 vs-fa2-9 clocks drift warnings; do
      echo "--- $name: $block" | tee -a "$LOG_DIR/summary.txt"
      "$EXPLORER" report --results "$LOG_DIR/$name.csv" --print "$block" 2>&1 \
        | tee -a "$LOG_DIR/summary.txt"
    done
  }
  if [[ ${#LOCKED_ARGS[@]} -gt 0 ]]; then
    # Restore the default clocks for the first sweep, then lock again for the second.
    nvidia-smi -rgc > /dev/null 2>&1 || log "clocks: nvidia-smi -rgc failed"
    clocks_sweep clocks
    if nvidia-smi -lgc "$LOCK_SM_CLOCK,$LOCK_SM_CLOCK" > /dev/null 2>&1; then
      clocks_sweep clocks-locked "${LOCKED_ARGS[@]}"
    else
      log "clocks: locking again failed; no clocks-locked.csv"
      LOCKED_ARGS=()
    fi
  else
    clocks_sweep clocks
  fi
fi

# The counters docs/versions cites (bank conflicts, stalls, tensor-pipe activity, local memory,
# instructions), one profiled launch per row, for every built step's configs at N = 4096.
COUNTER_METRICS="l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
COUNTER_METRICS+=",l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed.sum"
COUNTER_METRICS+=",sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
COUNTER_METRICS+=",smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct"
COUNTER_METRICS+=",smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct"
COUNTER_METRICS+=",smsp__warp_issue_stalled_wait_per_warp_active.pct"
COUNTER_METRICS+=",l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"
COUNTER_METRICS+=",l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"
COUNTER_METRICS+=",smsp__average_warp_latency_per_inst_issued.ratio"
if has_stage counters; then
  started=$SECONDS
  log "counters: explorer --csv --set prog --seq-lens 4096 --metric-runs 1 --metrics ... --output counters.csv"
  "$EXPLORER" --csv --set prog --seq-lens 4096 --metric-runs 1 --metrics "$COUNTER_METRICS" \
    "${LOCKED_ARGS[@]}" --output "$LOG_DIR/counters.csv" 2> "$LOG_DIR/counters.log" || STATUS=1
  log "counters: $(($(wc -l < "$LOG_DIR/counters.csv") - 1)) rows in $((SECONDS - started)) s"
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
      "$EXPLORER" --csv --set prog --devices "$devices" --seed 15 $SWEEP_ARGS "${LOCKED_ARGS[@]}" \
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

# The SASS artifact needs a CUDA 13 cuobjdump (this host's) and both architectures, so it has a
# build of its own: every step's picks (set tune includes prog) plus the tune configs of
# --sass-tune-steps, of which the export keeps each step's picks and its neighbours' picks.
if has_stage sass; then
  SASS_BUILD=${FLASHSCOPE_SASS_BUILD_DIR:-"$ROOT/build-sass"}
  SASS_OUT="$LOG_DIR/results/$GPU_FOLDER/sass"
  log "sass: build (set tune, steps ${SASS_STEPS:-all}, tune steps $SASS_TUNE_STEPS, 80-real;90a-real, FLASHSCOPE_SASS=ON)"
  SASS_ARGS=(-S "$ROOT" -B "$SASS_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
             -DFLASHSCOPE_KERNEL_SET=tune -DFLASHSCOPE_TUNE_STEPS="$SASS_TUNE_STEPS"
             -DFLASHSCOPE_STEPS="$SASS_STEPS"
             -DCMAKE_CUDA_ARCHITECTURES="80-real;90a-real" -DFLASHSCOPE_SASS=ON
             -DFLASHSCOPE_BUILD_GUI=OFF)
  [[ -n ${FLASHSCOPE_GIT_COMMIT:-} ]] && SASS_ARGS+=(-DFLASHSCOPE_GIT_COMMIT="$FLASHSCOPE_GIT_COMMIT")
  if cmake "${SASS_ARGS[@]}" > "$LOG_DIR/sass.log" 2>&1 &&
     cmake --build "$SASS_BUILD" -j "$JOBS" --target flashscope_sass_artifact test_sass_artifact \
       >> "$LOG_DIR/sass.log" 2>&1; then
    # With --sass-base the export is merged into that artifact (below), else it is the artifact.
    SASS_EXPORT=$SASS_OUT
    [[ -n $SASS_BASE ]] && SASS_EXPORT="$LOG_DIR/sass-steps-${SASS_STEPS//,/_}"
    "$SASS_BUILD/explorer/sass/flashscope-sass" export --from "$SASS_BUILD/sass" --to "$SASS_EXPORT" --replace \
      --progression-only --manifest "made_on=$GPU_NAME ($(hostname))" >> "$LOG_DIR/sass.log" 2>&1
    # The disassembler's own output for one object (the first step built, fp16; step 1 in a full
    # build): test_sass_artifact reads it and the stored listings to the same instructions.
    mkdir -p "$SASS_EXPORT/raw"
    OBJECT=$(find "$SASS_BUILD/kernels" -name 's*_fp16_*.cu.o' | sed 's|.*/s\([0-9]*\)_[^/]*$|\1 &|' \
               | sort -n -k1,1 -s | head -1 | cut -d' ' -f2-)
    cuobjdump -sass "$OBJECT" | gzip -9 > "$SASS_EXPORT/raw/$(basename "$OBJECT" .cu.o).cuobjdump-sass.txt.gz"
    SASS_CHECK=1
    if [[ -n $SASS_BASE ]]; then
      if "$SASS_BUILD/explorer/sass/flashscope-sass" merge --base "$SASS_BASE" --with "$SASS_EXPORT" \
           --to "$SASS_OUT" --replace >> "$LOG_DIR/sass.log" 2>&1; then
        log "sass: $(tail -1 "$LOG_DIR/sass.log")"
      else
        log "sass: merging into $SASS_BASE FAILED (see sass.log)"
        STATUS=1
        SASS_CHECK=0
      fi
    elif [[ -n $SASS_STEPS ]]; then
      log "sass: steps $SASS_STEPS alone in $SASS_OUT: not checked by test_sass_artifact (give --sass-base to merge them into a whole artifact)"
      SASS_CHECK=0
    fi
    if ((SASS_CHECK == 0)); then
      :
    elif "$SASS_BUILD/tests/sass/test_sass_artifact" --suite=shipped --results="$LOG_DIR/results" \
         >> "$LOG_DIR/sass.log" 2>&1 &&
       "$SASS_BUILD/tests/sass/test_sass_artifact" --suite=hopper --results="$LOG_DIR/results" \
         >> "$LOG_DIR/sass.log" 2>&1 &&
       "$SASS_BUILD/tests/sass/test_sass_artifact" --suite=coverage --results="$LOG_DIR/results" \
         >> "$LOG_DIR/sass.log" 2>&1; then
      log "sass: $(du -sh "$SASS_OUT" | cut -f1) in $SASS_OUT; test_sass_artifact passed (commit it as ${SASS_BASE:+${SASS_BASE#"$ROOT"/}, which it extends, or }results/$GPU_FOLDER/sass)"
    else
      log "sass: test_sass_artifact FAILED on $SASS_OUT (see sass.log)"
      STATUS=1
    fi
  else
    grep -E "error|FAILED" "$LOG_DIR/sass.log" | head -20 | tee -a "$LOG_DIR/summary.txt"
    STATUS=1
  fi
fi
# gui stage, part 2: the explorer drawn on Xvfb, and the GUI tests (explorer_gui_run_sweep: a
# sweep of step 25 started from the run panel, on the GPU).
if has_stage gui; then
  if [[ $GUI_SETUP != ok ]]; then
    log "gui: FAILED: the GUI runtime could not be set up (gui.log)"
    STATUS=1
  elif ! grep -q '^FLASHSCOPE_GUI_AVAILABLE:INTERNAL=ON' "$BUILD/CMakeCache.txt"; then
    log "gui: FAILED: the build has no GUI: $(grep -m1 'explorer GUI' "$LOG_DIR/build.log" || echo 'no configure message')"
    STATUS=1
  else
    # A probe on a long-running Xvfb: which OpenGL draws. NVIDIA's GLX client on a software X
    # server is what the device notes say works; if it cannot open a window, Mesa's llvmpipe
    # draws instead (the sweeps still run on the GPU through CUDA), and the summary says so.
    flashscope_gui_start_xvfb 2>> "$LOG_DIR/gui.log" || true
    gui_probe() {
      timeout 120 "$EXPLORER" --results "$ROOT/results/h100/progression-4096.csv" \
        --view progression --frames 3 --screenshot "$LOG_DIR/gui-probe.png" >> "$LOG_DIR/gui.log" 2>&1
    }
    if [[ -z ${DISPLAY:-} ]]; then
      log "gui: FAILED: Xvfb did not start (gui.log)"
      STATUS=1
    elif gui_probe; then
      GUI_GL=$(grep -m1 '^explorer: OpenGL' "$LOG_DIR/gui.log" || echo 'no OpenGL line')
      log "gui: probe on $DISPLAY with GLX vendor $__GLX_VENDOR_LIBRARY_NAME: $GUI_GL"
      # libglvnd falls back to the server's vendor (Mesa) when the named one does not load.
      if [[ $__GLX_VENDOR_LIBRARY_NAME == nvidia && $GUI_GL != *NVIDIA* ]]; then
        log "gui: WARNING: GLX vendor nvidia asked for, but the renderer is not NVIDIA's: libGLX_nvidia did not load (see gui.log); drawing on the CPU"
      fi
    elif [[ $__GLX_VENDOR_LIBRARY_NAME != mesa ]]; then
      log "gui: the explorer could not draw with GLX vendor $__GLX_VENDOR_LIBRARY_NAME: $(grep -m1 -E 'cannot|GLX|error' "$LOG_DIR/gui.log" | tail -1); falling back to mesa (llvmpipe)"
      export __GLX_VENDOR_LIBRARY_NAME=mesa
      if gui_probe; then
        log "gui: probe with GLX vendor mesa: $(grep '^explorer: OpenGL' "$LOG_DIR/gui.log" | tail -1)"
      else
        log "gui: FAILED: the explorer cannot draw on Xvfb with mesa either (gui.log)"
        STATUS=1
      fi
    else
      log "gui: FAILED: the explorer cannot draw on Xvfb (gui.log)"
      STATUS=1
    fi
    flashscope_gui_stop
    log "gui: ctest -R $GUI_TEST_REGEX (GLX vendor $__GLX_VENDOR_LIBRARY_NAME; xvfb-run: $(command -v xvfb-run))"
    GUI_CTEST_ENV=()
    if [[ $(nvidia-smi -L 2> /dev/null | grep -c '^GPU ' || true) -gt 0 ]]; then
      GUI_CTEST_ENV+=(FLASHSCOPE_REQUIRE_GPU=1)
    fi
    if ! env "${GUI_CTEST_ENV[@]}" ctest --test-dir "$BUILD" -R "$GUI_TEST_REGEX" -V -j 1 \
         > "$LOG_DIR/gui-ctest.log" 2>&1; then
      STATUS=1
    fi
    # ctest -V prefixes each test's output with its number ("71: explorer: ...").
    grep -E '^[0-9]+: explorer: (OpenGL|run panel)' "$LOG_DIR/gui-ctest.log" | sed 's/^[0-9]*: //' \
      | sort | uniq -c | tee -a "$LOG_DIR/summary.txt" || true
    grep -E 'tests passed|tests failed|Test +#[0-9]+: .*(\*\*\*|Not Run)' "$LOG_DIR/gui-ctest.log" | tee -a "$LOG_DIR/summary.txt" || true
    SHOTS="$BUILD/tests/explorer/screenshots"
    if [[ -f $SHOTS/explorer_gui_run_sweep.png ]]; then
      cp "$SHOTS/explorer_gui_run_sweep.png" "$LOG_DIR/gui-run-sweep.png"
    fi
    if compgen -G "$SHOTS/*.png" > /dev/null; then
      tar -czf "$LOG_DIR/gui-screenshots.tar.gz" -C "$SHOTS" .
      log "gui: $(find "$SHOTS" -name '*.png' | wc -l) screenshots in gui-screenshots.tar.gz"
    fi
  fi
fi
log "done (status $STATUS)"
exit $STATUS
