#!/usr/bin/env bash
# Runs `explorer` on a list of bad inputs, across every mode, and writes the table of what each
# gets (exit code and message) into docs/hardening.md between the bad-inputs markers.
#   scripts/bad_inputs.sh EXPLORER [--update | --check | --print]
#     --update  rewrite the table in docs/hardening.md (default)
#     --check   exit 1 if the table there differs from what the inputs get now (ctest runs this)
#     --print   print the table only
# Every input is rejected before any device is needed: the runs see no GPU
# (CUDA_VISIBLE_DEVICES=""), so one that got as far as looking for a GPU would exit 1 or 3, not the
# expected code. Each run must also leave the scratch folder as it found it (its paths and every
# file's checksum compared before and after: no file added, removed or changed, an interrupted
# sweep's .partial file included). A case whose exit code is not the expected one, or that
# touched a file, fails the script in every mode.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,11s/^# \{0,1\}//p' "$0"; }
if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
  usage
  [[ $# -ge 1 ]] && exit 0
  exit 2
fi
EXPLORER=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
MODE=${2:---update}
case $MODE in
  --update | --check | --print) ;;
  *)
    echo "bad_inputs.sh: '$MODE' is not --update, --check or --print" >&2
    exit 2
    ;;
esac
[[ -x $EXPLORER ]] || {
  echo "bad_inputs.sh: '$EXPLORER' is not an executable" >&2
  exit 2
}
DOC="$ROOT/docs/hardening.md"
BEGIN_MARKER='<!-- bad-inputs:begin (scripts/bad_inputs.sh --update writes this table) -->'
END_MARKER='<!-- bad-inputs:end -->'

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Fixtures: a shipped results file, the same file cut inside the last field of its last row
# (no line end), and one cut inside its quoted config.
VALID="results/h200/progression-4096.csv"
cp "$ROOT/$VALID" "$TMP/valid.csv"
head -c -8 "$ROOT/$VALID" > "$TMP/cut_in_last_field.csv"
# The last kernel row (it has a config) cut ten bytes into its config: the rows before it whole.
kernel_line=$(grep -n '"(' "$ROOT/$VALID" | tail -1 | cut -d: -f1)
{
  head -n $((kernel_line - 1)) "$ROOT/$VALID"
  sed -n "${kernel_line}p" "$ROOT/$VALID" | sed 's/\("([^,]*, [0-9]*\).*/\1/' | tr -d '\n'
} > "$TMP/cut_in_config.csv"
echo "# a document" > "$TMP/doc.md"
mkdir "$TMP/empty_folder"
# Files no command may overwrite or delete: an interrupted sweep's rows beside interrupted.csv,
# an unfinished document update, an earlier dump's tensors.
echo "step,config" > "$TMP/interrupted.csv.partial"
echo "# a document" > "$TMP/interrupted.md"
echo "# a document, half updated" > "$TMP/interrupted.md.partial"
mkdir "$TMP/earlier_dump"
echo "an earlier dump" > "$TMP/earlier_dump/q.npy"
# The valid file with its last row twice (a second copy of one measurement).
{
  cat "$ROOT/$VALID"
  tail -n 1 "$ROOT/$VALID"
} > "$TMP/duplicated.csv"

# expected exit code | mode | arguments (shell words; $TMP is the scratch folder)
CASES=(
  '2|--csv|--csv --config "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_0_tiles+opt_softmax+bogus_flag"'
  '2|--csv|--csv --config "(FP16, 128, 64, 64, 4): async+async+load_0_0_0_tiles"'
  '2|--csv|--csv --config "(FP16, 128, 64, 64, 4): async++load_0_0_0_tiles"'
  '2|--csv|--csv --seq-lens 512,abc --dtypes fp32 --heads 0 --min-rounds 0'
  '2|--csv|--csv --set everything'
  '2|--csv|--csv --steps 0-3'
  '2|--csv|--csv --reference fa3 --metrics none,dram__bytes_read.sum'
  '2|--csv|--csv --shard 3/2 --devices 0,x'
  '2|--csv|--csv --run-id "a,b" --locked-sm-clock -5 --timeout 0'
  '2|--csv|--csv --steps 7 --output $TMP/no_such_folder/sweep.csv'
  '2|--csv|--csv --output $TMP/empty_folder'
  '2|--csv|--csv --max-rounds many'
  '2|--csv|--csv --ci-target 0 --cell-seconds -1'
  '2|--csv|--csv --min-rounds 50 --max-rounds 10'
  '2|--csv|--csv --launch-pattern loop --gap-us -3'
  '2|--csv|--csv --seq-lens 1000'
  '2|--csv|--csv --seed -1'
  '2|--csv|--csv --heads 32 --heads-kv 5'
  '2|--csv|--csv --heads 32 --heads-kv 0,8'
  '2|--csv|--csv --steps 25 --heads 32 --heads-kv 8'
  '2|--csv|--csv --pass backward --steps 1-26'
  '2|--csv|--csv --pass backward --steps 101 --heads 32 --heads-kv 8'
  '2|--csv|--csv --causal 2'
  '2|--csv|--csv --causal yes,0'
  '2|--csv|--csv --steps 7 --causal 1'
  '2|--csv|--csv --steps 25 --dtypes fp8'
  '2|--csv|--steps 7'
  '2|--csv|--csv --set tune --config "(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles"'
  '2|--csv|--csv --seq-lens 99999999999'
  '2|--csv|--csv --config "(FP16, 128, 64, 64, 0): async+load_9_9_9_tiles"'
  '2|--csv|--csv --config "(FP16, 128, 128, 32, 8): async+load_0_0_0_tiles"'
  '2|check|check'
  '2|check|check --step 7 --config "(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles+fast" --dtype fp32 --batch 0 --input-scale 0'
  '2|check|check --step 7 --seq-len 100'
  '2|check|check --step 7 --causal'
  '2|check|check --step 26 --heads 6 --heads-kv 4'
  '2|check|check --step 25 --heads 8 --heads-kv 2'
  '2|check|check --step 16 --dtype e4m3'
  '2|check|check --step 29 --dtype e4m3 --quantize per-tile'
  '2|check|check --step 31 --dtype e4m3 --quantize per-row'
  '2|check|check --step 31 --outliers'
  '2|check|check --step B9'
  '2|check|check --step 26 --pass backward'
  '2|check|check --step 101 --heads 8 --heads-kv 2'
  '2|check|check --step 102 --d-head 256'
  '2|check|check --step 35 --persistent-ctas 0'
  '2|check|check --step 7 --dump $TMP/valid.csv --device -1'
  '2|check|check --step 3 --config "(FP16, 128, 128, 32, 8): async+load_0_0_0_tiles"'
  '2|check|check --step 7 --dump $TMP/earlier_dump'
  '2|merge|merge $TMP/absent.csv $TMP/valid.csv --output $TMP/no_such_folder/all.csv'
  '2|merge|merge $TMP/valid.csv $TMP/cut_in_last_field.csv --output $TMP/all.csv'
  '2|merge|merge $TMP/cut_in_config.csv --output $TMP/all.csv'
  '2|merge|merge $TMP/valid.csv --output $TMP/all.csv --set nothing --steps 0'
  '2|merge|merge $TMP/valid.csv'
  '2|merge|merge $TMP/valid.csv --output $TMP/interrupted.csv'
  '2|compare|compare $TMP/absent.csv $TMP/valid.csv --max-median-diff -1'
  '2|compare|compare $TMP/valid.csv $TMP/cut_in_last_field.csv'
  '2|compare|compare $TMP/valid.csv'
  '2|compare|compare $TMP/valid.csv $TMP/duplicated.csv'
  '2|report|report --results-dir $TMP/no_such_folder --check $TMP/doc.md'
  '2|report|report --results $TMP/absent.csv --update $TMP/absent.md'
  '2|report|report --results $TMP/valid.csv'
  '1|report|report --results $TMP/cut_in_last_field.csv --check $TMP/doc.md'
  '1|report|report --results-dir $TMP/empty_folder --check $TMP/doc.md'
  '1|report|report --results $TMP/valid.csv --check $TMP/doc.md'
  '2|report|report --results $TMP/valid.csv --update $TMP/interrupted.md'
  '2|sass|sass --by opcodes --dtype fp32 --context -5'
  '2|sass|sass --step 9 --config "(FP16, 128, 64, 64, 4): swizzle+load_0_0_0_tiles" --against x:1'
  '2|sass|sass --step 9 --output $TMP/no_such_folder/sass.txt'
  '2|sass|sass --step 9 --output $TMP/interrupted.csv'
  '2|peak|peak --only mma.sync,tma --dtypes fp8 --work-scale 20'
  '2|peak|peak --runs 0 --warmup 0 --output $TMP/no_such_folder/peak.csv'
  '2|peak|peak --output $TMP/interrupted.csv'
  '2|--list-set|--list-set fastest'
  '2|(all)|--frobnicate'
  '2|(GUI)|--results $TMP/absent.csv --view charts --detail-tab source'
  '2|(GUI)|--results-dir $TMP/no_such_folder'
  '2|(GUI)|--frames 0 --screenshot $TMP/no_such_folder/shot.png'
  '2|(GUI)|--progression-opcode BOGUS'
)

# A message as one markdown table cell: paths made stable, markdown's special characters escaped,
# line breaks as <br>, long messages cut.
cell() {
  local text=$1
  text=${text//"$TMP"/\$TMP}
  text=${text//"$ROOT"/.}
  # Quoted replacements: bash 5.2 (patsub_replacement) reads an unquoted & there as the match.
  text=${text//&/"&amp;"}
  text=${text//</"&lt;"}
  text=${text//>/"&gt;"}
  text=${text//|/\\|}
  text=${text//\*/\\*}
  if ((${#text} > 700)); then text="${text:0:700} … ($((${#text} - 700)) more characters)"; fi
  text=${text//$'\n'/<br>}
  printf '%s' "$text"
}

# The scratch folder's paths and every file's checksum: a run must add, remove and change nothing.
snapshot() {
  (cd "$TMP" && find . | sort && find . -type f -print0 | sort -z | xargs -0 -r md5sum)
}

table() {
  echo "| # | mode | input | exit | message |"
  echo "|---:|---|---|---:|---|"
  local index=0 failures=0 entry expected mode arguments output code before after
  for entry in "${CASES[@]}"; do
    index=$((index + 1))
    expected=${entry%%|*}
    entry=${entry#*|}
    mode=${entry%%|*}
    arguments=${entry#*|}
    before=$(snapshot)
    code=0
    output=$(cd "$ROOT" && eval "CUDA_VISIBLE_DEVICES= \"\$EXPLORER\" $arguments" 2>&1 < /dev/null) ||
      code=$?
    after=$(snapshot)
    if [[ $code != "$expected" ]]; then
      echo "bad_inputs.sh: case $index (explorer $arguments) exited $code, not $expected:" >&2
      echo "$output" >&2
      failures=$((failures + 1))
    fi
    if [[ $before != "$after" ]]; then
      echo "bad_inputs.sh: case $index (explorer $arguments) left, removed or changed files:" >&2
      diff <(echo "$before") <(echo "$after") >&2 || true
      failures=$((failures + 1))
      (cd "$TMP" && comm -13 <(echo "$before" | grep -v '^[0-9a-f]\{32\} ') \
        <(echo "$after" | grep -v '^[0-9a-f]\{32\} ') | xargs -r rm -rf)
    fi
    printf '| %d | %s | `explorer %s` | %d | %s |\n' "$index" "$mode" \
      "$(cell "$arguments" | sed 's/`/\\`/g')" "$code" "$(cell "$output")"
  done
  echo
  echo "$index inputs; each was rejected before any device was needed and left every file as it"
  echo "found it (none added, removed or changed)."
  return "$failures"
}

generated=$(table) || {
  echo "bad_inputs.sh: some inputs did not get the expected exit code or touched files (above)" >&2
  exit 1
}
case $MODE in
  --print) echo "$generated" ;;
  --update | --check)
    grep -qF "$BEGIN_MARKER" "$DOC" && grep -qF "$END_MARKER" "$DOC" || {
      echo "bad_inputs.sh: $DOC lacks the markers $BEGIN_MARKER ... $END_MARKER" >&2
      exit 1
    }
    updated=$(BEGIN="$BEGIN_MARKER" END="$END_MARKER" TABLE="$generated" awk '
      $0 == ENVIRON["BEGIN"] { print; print ENVIRON["TABLE"]; skipping = 1; next }
      $0 == ENVIRON["END"] { skipping = 0 }
      !skipping { print }' "$DOC")
    if [[ $MODE == --update ]]; then
      printf '%s\n' "$updated" > "$DOC.partial" && mv "$DOC.partial" "$DOC"
      echo "bad_inputs.sh: $(grep -c '^| [0-9]' <<< "$generated") inputs written to $DOC"
    elif [[ $updated != "$(cat "$DOC")" ]]; then
      echo "bad_inputs.sh: the table in $DOC differs from what the inputs get now:" >&2
      diff <(cat "$DOC") <(printf '%s\n' "$updated") >&2 || true
      echo "bad_inputs.sh: run scripts/bad_inputs.sh $1 --update" >&2
      exit 1
    else
      echo "bad_inputs.sh: the table in $DOC matches: $(grep -c '^| [0-9]' <<< "$generated") inputs"
    fi
    ;;
esac
