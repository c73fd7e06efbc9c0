#!/usr/bin/env bash
# scripts/step_diff.sh on the real tree: every step with its own folder diffs against its
# neighbour with no namespace or include-path rename left (only the technique and the
# descriptor's identity lines), steps sharing v01_07 say so, and a step without a predecessor is a
# usage error (exit 2).
set -uo pipefail
ROOT=$1
DIFF="$ROOT/scripts/step_diff.sh"
failures=0
last=$(grep -c 'versions/v[0-9_]*/step.hpp' "$ROOT/kernels/versions/steps.hpp")
for step in $(seq 8 $((last + 6))); do
  folder=$(printf 'v%02d' "$step")
  [[ -d $ROOT/kernels/versions/$folder ]] || continue
  out=$("$DIFF" "$step")
  status=$?
  if [[ $status -ne 1 ]]; then
    echo "step $step: exit $status, expected 1 (differences shown)"; failures=$((failures + 1))
  fi
  renames=$(echo "$out" | grep -E '^[-+][^-+]' | grep -E 'flashscope::v[0-9]|kernels/versions/v[0-9]')
  if [[ -n $renames ]]; then
    echo "step $step: rename lines left in the diff:"; echo "$renames"; failures=$((failures + 1))
  fi
done
"$DIFF" 5 | grep -q "share kernels/versions/v01_07" || { echo "step 5: no shared-folder note"; failures=$((failures + 1)); }
"$DIFF" 1 > /dev/null 2>&1; [[ $? -eq 2 ]] || { echo "step 1: expected exit 2"; failures=$((failures + 1)); }
"$DIFF" x > /dev/null 2>&1; [[ $? -eq 2 ]] || { echo "step x: expected exit 2"; failures=$((failures + 1)); }
echo "check_step_diff: $failures failures"
[[ $failures -eq 0 ]]
