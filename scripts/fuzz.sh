#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (Clang, ASan + UBSan) and runs each for SECONDS;
# fails on any finding. CI runs it from scripts/test.sh; docs/hardening.md describes the targets,
# the properties they check and how to reproduce a finding.
set -euo pipefail

usage() {
  cat << 'EOF'
usage: scripts/fuzz.sh [options] [SECONDS]

Builds every fuzz target in BUILD_DIR (default build-fuzz) with clang++-14, ASan and UBSan, then
fuzzes each for SECONDS (default 60) from its seeds in tests/fuzz/corpus/<target> plus what earlier
runs in BUILD_DIR found (BUILD_DIR/corpus/<target>). Exits 1 if any target crashed, hung (an input
running over 10 s), used over 2 GiB, leaked, broke a property or hit a sanitizer report; each
finding is saved as BUILD_DIR/findings/<target>/<kind>-<sha1> and its log in BUILD_DIR/logs.

options:
  --build-dir DIR      build and work here (default build-fuzz)
  --targets A,B        only these targets (default: all): fuzz_config, fuzz_selection,
                       fuzz_results_csv, fuzz_results_model
  --jobs N             targets fuzzed at the same time, one core each (default: nproc)
  --seed N             libFuzzer's random seed, for a repeatable run (default: a fresh one,
                       printed in the log)
  -h, --help           this text

Reproduce a finding:   BUILD_DIR/tests/fuzz/<target> BUILD_DIR/findings/<target>/crash-...
Shrink it:             BUILD_DIR/tests/fuzz/<target> -minimize_crash=1 -runs=10000 FILE
EOF
}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build-fuzz"
SECONDS_EACH=60
JOBS=$(nproc)
SEED=""
ALL_TARGETS=(fuzz_config fuzz_selection fuzz_results_csv fuzz_results_model)
TARGETS=("${ALL_TARGETS[@]}")

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --build-dir)
      BUILD=$(realpath -m "${2:?--build-dir needs a folder}")
      shift 2
      ;;
    --targets)
      IFS=, read -r -a TARGETS <<< "${2:?--targets needs a comma-separated list}"
      shift 2
      ;;
    --jobs)
      JOBS=${2:?--jobs needs a number}
      shift 2
      ;;
    --seed)
      SEED=${2:?--seed needs a number}
      shift 2
      ;;
    -*)
      echo "fuzz.sh: unknown option '$1' (see --help)" >&2
      exit 2
      ;;
    *)
      SECONDS_EACH=$1
      shift
      ;;
  esac
done
[[ $SECONDS_EACH =~ ^[1-9][0-9]*$ ]] \
  || { echo "fuzz.sh: SECONDS '$SECONDS_EACH' is not a positive whole number" >&2; exit 2; }
[[ $JOBS =~ ^[1-9][0-9]*$ ]] \
  || { echo "fuzz.sh: --jobs '$JOBS' is not a positive whole number" >&2; exit 2; }
[[ -z $SEED || $SEED =~ ^[0-9]+$ ]] \
  || { echo "fuzz.sh: --seed '$SEED' is not a whole number" >&2; exit 2; }
for target in "${TARGETS[@]}"; do
  [[ " ${ALL_TARGETS[*]} " == *" $target "* ]] \
    || { echo "fuzz.sh: unknown target '$target' (targets: ${ALL_TARGETS[*]})" >&2; exit 2; }
done

# Per target: its dictionary and the largest input worth trying (a config or key is short; a
# CSV needs room for a header and some rows).
declare -A DICT=([fuzz_config]=config [fuzz_selection]=selection [fuzz_results_csv]=results_csv
                 [fuzz_results_model]=results_csv)
declare -A MAX_LEN=([fuzz_config]=512 [fuzz_selection]=128 [fuzz_results_csv]=16384
                    [fuzz_results_model]=16384)

"$ROOT/scripts/install_deps.sh"
export PATH="$PATH:/usr/local/cuda/bin"
start=$(date +%s)
mkdir -p "$BUILD"
# Only the fuzz targets are built: the kernel set is the smallest, and no test, GUI or
# baseline (FA2/cuDNN) library is configured.
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-14 -DFLASHSCOPE_SANITIZE=address,undefined -DFLASHSCOPE_BUILD_FUZZERS=ON \
  -DFLASHSCOPE_BUILD_TESTS=OFF -DFLASHSCOPE_BUILD_GUI=OFF -DFLASHSCOPE_WITH_TORCH=OFF \
  -DFLASHSCOPE_WITH_CUDNN=OFF -DFLASHSCOPE_KERNEL_SET=ci -DFLASHSCOPE_STEPS=1 \
  -DCMAKE_CUDA_ARCHITECTURES=80-real > "$BUILD/configure.log" 2>&1 \
  || { cat "$BUILD/configure.log" >&2; exit 1; }
cmake --build "$BUILD" --target "${TARGETS[@]}" -j "$(nproc)"
built=$(date +%s)

export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
mkdir -p "$BUILD/logs"

run_target() {
  local target=$1 status=0
  mkdir -p "$BUILD/corpus/$target" "$BUILD/findings/$target"
  local args=(-max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048
              -max_len="${MAX_LEN[$target]}" -dict="$ROOT/tests/fuzz/dict/${DICT[$target]}.dict"
              -artifact_prefix="$BUILD/findings/$target/" -print_final_stats=1)
  [[ -z $SEED ]] || args+=(-seed="$SEED")
  # New inputs go to the first folder; the checked-in seeds are only read.
  "$BUILD/tests/fuzz/$target" "${args[@]}" "$BUILD/corpus/$target" \
    "$ROOT/tests/fuzz/corpus/$target" > "$BUILD/logs/$target.log" 2>&1 || status=$?
  echo "$status" > "$BUILD/logs/$target.status"
}

echo "fuzz.sh: ${TARGETS[*]}: $SECONDS_EACH s each, $JOBS at a time; logs in $BUILD/logs"
rm -f "$BUILD"/logs/*.status
for target in "${TARGETS[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $JOBS ]]; do
    wait -n || true
  done
  run_target "$target" &
done
wait
failed=0
printf '%-20s %12s %10s %8s %s\n' target executions exec/s corpus result
for target in "${TARGETS[@]}"; do
  result=ok
  [[ $(cat "$BUILD/logs/$target.status" 2> /dev/null) == 0 ]] || result=FINDING
  log="$BUILD/logs/$target.log"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(find "$BUILD/corpus/$target" -type f | wc -l)
  if [[ $result != ok ]]; then
    failed=1
    artifact=$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)
    result="FINDING: ${artifact:-see $log}"
  fi
  printf '%-20s %12s %10s %8s %s\n' "$target" "${runs:-?}" "${speed:-?}" "$corpus" "$result"
done
echo "fuzz.sh: build $((built - start)) s, fuzzing $(($(date +%s) - built)) s"
if [[ $failed -ne 0 ]]; then
  echo "fuzz.sh: findings above; each log ends with the report. Reproduce with" \
    "$BUILD/tests/fuzz/<target> <file>; docs/hardening.md says how to turn one into a test." >&2
  for target in "${TARGETS[@]}"; do
    grep -q "Test unit written\|ERROR:\|fuzz property violated" "$BUILD/logs/$target.log" \
      && { echo "---- $target" >&2; grep -Ev '^#[0-9]|NEW_FUNC' "$BUILD/logs/$target.log" | tail -40 >&2; }
  done
  exit 1
fi
