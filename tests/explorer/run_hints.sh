#!/usr/bin/env bash
# Every hint `explorer` prints on the command line is a command that works: this test provokes
# each message that suggests a command, takes the suggested command out of the actual output (not
# a copy of it), runs it and checks it does what the hint says. Hints whose command needs a GPU are
# run without one (CUDA_VISIBLE_DEVICES="") and must get past the argument checks: they may only
# fail for want of a device, never with a usage error (exit 2).
#   tests/explorer/run_hints.sh EXPLORER SOURCE_DIR
set -uo pipefail
EXPLORER=$1
ROOT=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export CUDA_VISIBLE_DEVICES=
failures=0
hints=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# Runs explorer with the given words; sets OUT (stdout and stderr) and CODE.
run() {
  OUT=$("$EXPLORER" "$@" 2>&1 < /dev/null)
  CODE=$?
}
ran_hint() {
  hints=$((hints + 1))
  echo "hint $hints: explorer $* -> exit $CODE"
}

cp "$ROOT/results/h200/progression-4096.csv" "$TMP/shard.csv"

# 1. merge without the sweep's selection: "give the sweep's selection options, e.g. --set tune
#    --steps 7,16, to list missing plan cells".
run merge "$TMP/shard.csv" --output "$TMP/all.csv"
[[ $CODE == 0 ]] || fail "merge of one shard exited $CODE: $OUT"
selection=$(sed -n 's/.*selection options, e\.g\. \(.*\), to list missing plan cells.*/\1/p' <<< "$OUT")
if [[ -z $selection ]]; then
  fail "merge printed no selection hint: $OUT"
else
  # shellcheck disable=SC2086  # the hint is a list of words
  run merge "$TMP/shard.csv" --output "$TMP/all_checked.csv" $selection
  ran_hint merge ... $selection
  [[ $CODE == 0 || $CODE == 1 ]] || fail "the hint's merge exited $CODE: $OUT"
  grep -q "plan cells of the selection" <<< "$OUT" || fail "the hint did not check coverage: $OUT"
fi

# 2. report --check on a stale block: "differs from the data (run explorer report --update DOC)".
{
  echo "# stale"
  echo "<!-- flashscope:begin progression -->"
  echo "an old table"
  echo "<!-- flashscope:end progression -->"
} > "$TMP/stale.md"
run report --check "$TMP/stale.md"
[[ $CODE == 1 ]] || fail "report --check of a stale block exited $CODE: $OUT"
command=$(sed -n 's/.*(run explorer \(report --update [^)]*\)).*/\1/p' <<< "$OUT" | head -1)
if [[ -z $command ]]; then
  fail "report --check printed no update hint: $OUT"
else
  # shellcheck disable=SC2086
  run $command
  ran_hint $command
  [[ $CODE == 0 ]] || fail "the hint's report --update exited $CODE: $OUT"
  run report --check "$TMP/stale.md"
  [[ $CODE == 0 ]] || fail "after the hint, report --check still exits $CODE: $OUT"
  grep -q "every block matches" <<< "$OUT" || fail "report --check printed no summary: $OUT"
fi

# 3. report over a folder without CSVs: "measure some with explorer --csv --output FILE.csv".
mkdir "$TMP/empty"
run report --results-dir "$TMP/empty" --check "$TMP/stale.md"
command=$(sed -n 's/.*measure some with explorer \(--csv [^)]*\)).*/\1/p' <<< "$OUT" | head -1)
if [[ -z $command ]]; then
  fail "report over an empty folder printed no measuring hint: $OUT"
else
  # shellcheck disable=SC2086
  run ${command//FILE/$TMP\/measured}
  ran_hint "$command"
  [[ $CODE == 1 ]] && grep -q "needs a GPU" <<< "$OUT" ||
    fail "the hint's sweep did not get as far as looking for a GPU (exit $CODE): $OUT"
fi

# 4. a config that is not built: "closest built configs of step 7:" then one per line; each is a
#    config `check --step 7 --config` takes (it gets as far as looking for a GPU).
run check --step 7 --config "(FP16, 128, 64, 16, 4): async+eager+swizzled+load_0_2_2_tiles+opt_softmax"
[[ $CODE == 2 ]] || fail "check of an unbuilt config exited $CODE: $OUT"
closest=$(sed -n '/closest built configs of step 7:/,$p' <<< "$OUT" | sed -n 's/^ *\((FP16.*\)$/\1/p')
[[ -n $closest ]] || fail "check printed no closest configs: $OUT"
while IFS= read -r config; do
  [[ -z $config ]] && continue
  run check --step 7 --config "$config"
  ran_hint check --step 7 --config "\"$config\""
  [[ $CODE == 3 ]] && grep -q "CUDA device" <<< "$OUT" ||
    fail "check of the suggested config exited $CODE: $OUT"
done <<< "$closest"

# 5. an unknown selection key lists the valid keys: each one lists configs.
run --list-set fastest
[[ $CODE == 2 ]] || fail "--list-set of an unknown key exited $CODE: $OUT"
keys=$(sed -n 's/.*valid keys are \(.*\)/\1/p' <<< "$OUT" | grep -oE '(^|, | or )[a-z_]+ \(' |
  sed -E 's/^(, | or )//; s/ \($//')
[[ -n $keys ]] || fail "--list-set printed no valid keys: $OUT"
# and the B_r,B_c key's example ("e.g. 128,64").
keys+=" $(sed -n 's/.*block shape, e\.g\. \([0-9]*,[0-9]*\)).*/\1/p' <<< "$OUT")"
for key in $keys; do
  run --list-set "$key"
  ran_hint --list-set "$key"
  [[ $CODE == 0 && -n $OUT ]] || fail "--list-set $key exited $CODE: $OUT"
done

# 6. after a parse error (CLI11's): "Run explorer MODE --help for more information.", for the
#    top level and for a mode.
for words in "--frobnicate" "merge $TMP/shard.csv" "check --step"; do
  # shellcheck disable=SC2086
  run $words
  [[ $CODE == 2 ]] || fail "explorer $words exited $CODE: $OUT"
  command=$(sed -n 's/^Run explorer \(.*--help\) for more information\.$/\1/p' <<< "$OUT")
  if [[ -z $command ]]; then
    fail "explorer $words printed no --help hint: $OUT"
    continue
  fi
  # shellcheck disable=SC2086
  run $command
  ran_hint $command
  [[ $CODE == 0 ]] && grep -q "^Usage: " <<< "$OUT" || fail "explorer $command exited $CODE: $OUT"
  [[ $words == merge* ]] && ! grep -q "Join the CSVs" <<< "$OUT" &&
    fail "the hint after a merge error is not merge's help: $command"
done

# 7. an interrupted sweep's rows: "--output 'FILE.partial' exists ...: move or delete it first".
touch "$TMP/sweep.csv.partial"
run --csv --output "$TMP/sweep.csv"
[[ $CODE == 2 ]] && grep -q "move or delete it first" <<< "$OUT" ||
  fail "a leftover FILE.partial was not reported (exit $CODE): $OUT"
rm "$TMP/sweep.csv.partial"
run --csv --output "$TMP/sweep.csv"
ran_hint --csv --output "$TMP/sweep.csv" "(after removing the partial file)"
[[ $CODE == 1 ]] && grep -q "needs a GPU" <<< "$OUT" ||
  fail "after removing the partial file the sweep did not get as far as the GPU: $OUT"
[[ -e $TMP/sweep.csv || -e $TMP/sweep.csv.partial ]] && fail "a sweep without a GPU left a file"

echo "$hints hints run, $failures failures"
((hints >= 8)) || fail "only $hints hints were run"
exit $((failures > 0))
