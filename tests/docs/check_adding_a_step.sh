#!/usr/bin/env bash
# Keeps docs/adding-a-step.md's "What you touch" true: in a temporary copy of the repository
# (tracked and untracked files, not ignored ones) it adds a step exactly as the page says, then
# builds that copy and runs its tests. It fails when the step needs any file changed that
# the page does not list.
#   tests/docs/check_adding_a_step.sh [--keep] [--jobs N]
# What it does, in the copy:
#   1. runs the commands between the page's adding-a-step:commands markers, with PREV the last
#      step folder of kernels/versions/steps.hpp and NEW the next number;
#   2. writes docs/versions/NEW.md (a page is the one file the page says to write by hand);
#   3. configures and builds it as scripts/ci_build.sh does (the ci kernel set, every step), then
#      regenerates the bad-inputs table as the page says;
#   4. runs every test but test_shipped_results and test_sass_artifact_coverage (each step's rows
#      and SASS come from a GPU run: the page's "after a GPU run" row) and this check;
#   5. checks that the files changed are exactly the page's list.
# The copy's build folder is build-ci, as the main build's is, and CCACHE_BASEDIR is the copy: with
# ccache (install_deps.sh installs it) every object the new step does not change is a cache hit of
# the main build's, so what compiles anew is the new step's kernels and the sources that include
# the step list. About 4 minutes on 2 cores after scripts/test.sh's build. --keep leaves the copy
# for inspection.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KEEP=0
JOBS=$(nproc)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --keep) KEEP=1; shift ;;
    --jobs) JOBS="$2"; shift 2 ;;
    -h | --help) sed -n '2,19s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "check_adding_a_step.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
fail() { echo "check_adding_a_step.sh: FAIL: $*" >&2; exit 1; }
PAGE="$ROOT/docs/adding-a-step.md"
BEGIN='<!-- adding-a-step:commands:begin'
END='<!-- adding-a-step:commands:end -->'
grep -q "^$BEGIN" "$PAGE" || fail "docs/adding-a-step.md has no '$BEGIN' block"
# The shell of the fenced block between the markers.
COMMANDS=$(sed -n "/^$BEGIN/,/^$END/p" "$PAGE" | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d')
[[ -n $COMMANDS ]] || fail "the commands block of docs/adding-a-step.md holds no \`\`\`sh fence"

COPY=$(mktemp -d "${TMPDIR:-/tmp}/flashscope_adding_a_step.XXXXXX")
LOGS="$COPY.logs"  # beside the copy, so that they are not changes of it
mkdir -p "$LOGS"
if [[ $KEEP == 0 ]]; then
  trap 'rm -rf "$COPY" "$LOGS"' EXIT
else
  echo "copy kept in $COPY, logs in $LOGS"
fi
# The tree as a clone would have it, plus what is not committed yet (not the ignored builds).
if git -C "$ROOT" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' | tar --null -T - -cf -) |
    tar -xf - -C "$COPY"
else
  tar -C "$ROOT" --exclude='./build*' -cf - . | tar -xf - -C "$COPY"
fi
cd "$COPY"
git init -q . && git add -A && git -c user.name=check -c user.email=check@localhost commit -qm base

# The last step's folder (the copy's PREV) and the next number.
PREV=$(grep -o '^#include "kernels/versions/v[0-9][0-9]/step.hpp"' kernels/versions/steps.hpp |
  tail -1 | sed -E 's|.*/v([0-9]+)/step.hpp"|\1|')
[[ -n $PREV ]] || fail "no vNN step folder is included by kernels/versions/steps.hpp"
NEW=$(printf '%02d' $((10#$PREV + 1)))
echo "adding step $NEW as a copy of step $PREV, as docs/adding-a-step.md says"
PREV=$PREV NEW=$NEW bash -euo pipefail -c "$COMMANDS" || fail "the page's commands failed"
cat > "docs/versions/$NEW.md" << EOF
# Step $((10#$NEW)): a copy of step $((10#$PREV))

Written by tests/docs/check_adding_a_step.sh: a step added as docs/adding-a-step.md says.
EOF

export PATH="$PATH:/usr/local/cuda/bin"
export CCACHE_BASEDIR=$COPY
export CCACHE_NOHASHDIR=1  # the copy's build folder is another path: scripts/ci_build.sh says why
BUILD="$COPY/build-ci"
echo "configure and build as scripts/ci_build.sh does ($JOBS jobs)"
scripts/ci_build.sh "$BUILD" > "$LOGS/build.log" 2>&1 ||
  { grep -E "error|FAILED|Error" "$LOGS/build.log" | head -30; fail "the build failed"; }
scripts/bad_inputs.sh "$BUILD/explorer/explorer" --update ||
  fail "scripts/bad_inputs.sh --update failed"

echo "the copy's tests (all but test_shipped_results, test_sass_artifact_coverage and this check)"
RUN=(ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS"
  -E '^(test_shipped_results|test_sass_artifact_coverage|adding_a_step)$')
if [[ -z ${DISPLAY:-} ]] && command -v xvfb-run > /dev/null; then
  RUN=(xvfb-run -a -s "-screen 0 1600x1000x24" "${RUN[@]}")
fi
"${RUN[@]}" > "$LOGS/ctest.log" 2>&1 || {
  grep -E "Failed|\*\*\*|ERROR" "$LOGS/ctest.log" | head -40
  fail "tests fail with only the files docs/adding-a-step.md lists changed"
}
tail -3 "$LOGS/ctest.log"

# The files changed are exactly the page's: the folder, the page, steps.hpp, hardening.md.
git add -A .  # build-ci is ignored (.gitignore)
CHANGED=$(git diff --cached --name-only HEAD | sed -E "s|^kernels/versions/v$NEW/.*|kernels/versions/v$NEW/|" | sort -u)
EXPECTED=$(printf '%s\n' "docs/hardening.md" "docs/versions/$NEW.md" "kernels/versions/steps.hpp" \
  "kernels/versions/v$NEW/" | sort)
if [[ $CHANGED != "$EXPECTED" ]]; then
  echo "changed:"; echo "$CHANGED" | sed 's/^/  /'
  echo "the page lists:"; echo "$EXPECTED" | sed 's/^/  /'
  fail "the files changed are not the ones docs/adding-a-step.md lists"
fi
echo "check_adding_a_step.sh: step $((10#$NEW)) added with the files docs/adding-a-step.md lists; its tests pass"
