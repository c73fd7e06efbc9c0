#!/usr/bin/env bash
# Shows what step N changed: `diff -ruN` of the previous step's kernel folder against step N's,
# with each folder's own name in namespaces and include paths written as vNN (every snapshot
# repeats its neighbour under its own name: flashscope::v21 -> flashscope::vNN,
# kernels/versions/v21/ -> kernels/versions/vNN/), so the diff shows the step's technique and not
# those renames. The explorer's step detail view embeds the same diff.
#
#   scripts/step_diff.sh STEP [DIFF OPTIONS...]     e.g. scripts/step_diff.sh 22, or 12 -u --stat
#
# A backward step is B2 or its number 102 (kernels/versions/b02 against b01); B1 is the backward
# track's first step and has none before it.
#
# Exit status: 0 no differences, 1 differences shown, 2 a usage error (nothing shown).
set -euo pipefail
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -h && $1 != --help ]] || usage
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STEP=$1
shift
# B1, B2, ... are steps 101, 102, ... (kernels/common/step_descriptor.hpp: step_name).
if [[ $STEP =~ ^[Bb]([0-9]+)$ ]]; then STEP=$((100 + 10#${BASH_REMATCH[1]})); fi
LIST="$ROOT/kernels/versions/steps.hpp"
# The folder of each step, in step order, from the descriptors' list (one `vNN/step.hpp` include
# per folder; steps 1-7 share v01_07).
folder_of() {
  local step=$1
  if [[ ! $step =~ ^[0-9]+$ ]]; then return 1; fi
  if ((step >= 1 && step <= 7)); then echo v01_07; return 0; fi
  local name
  if ((step >= 101)); then name=$(printf 'b%02d' $((step - 100))); else name=$(printf 'v%02d' "$step"); fi
  [[ -d $ROOT/kernels/versions/$name ]] || return 1
  grep -q "versions/$name/step.hpp" "$LIST" || return 1
  echo "$name"
}
if ! CURRENT=$(folder_of "$STEP") || ((STEP < 2 || STEP == 101)); then
  echo "step_diff.sh: '$STEP' is not a step with a step before it (steps are listed in kernels/versions/steps.hpp)" >&2
  exit 2
fi
PREVIOUS=$(folder_of $((STEP - 1)))
if [[ $CURRENT == "$PREVIOUS" ]]; then
  echo "steps $((STEP - 1)) and $STEP share kernels/versions/$CURRENT: they differ only in their kernel configuration"
  exit 0
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for folder in "$PREVIOUS" "$CURRENT"; do
  cp -r "$ROOT/kernels/versions/$folder" "$WORK/$folder"
  find "$WORK/$folder" -type f -exec sed -i \
    -e "s#flashscope::$folder#flashscope::vNN#g" \
    -e "s#kernels/versions/$folder/#kernels/versions/vNN/#g" {} +
done
cd "$WORK"
status=0
diff -ruN "$@" "$PREVIOUS" "$CURRENT" || status=$?
exit "$status"
