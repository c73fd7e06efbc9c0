#!/usr/bin/env bash
# Lists every test the last ctest run of BUILD_DIR skipped, with its reason: the "SKIPPED: ..."
# lines the test printed (tests/support/gpu_test_main.cpp), once per test and reason, from
# BUILD_DIR/Testing/Temporary/LastTest.log, where ctest keeps every test's output (its console
# shows only "(Skipped)"). A skipped test that printed no reason is listed as such.
#   scripts/list_skipped_tests.sh BUILD_DIR        prints nothing when no test was skipped
set -euo pipefail
if [[ $# -ne 1 || $1 == -h || $1 == --help ]]; then
  sed -n '2,6s/^# \{0,1\}//p' "$0"
  [[ $# -eq 1 && ($1 == -h || $1 == --help) ]] && exit 0
  exit 2
fi
LOG="$1/Testing/Temporary/LastTest.log"
if [[ ! -f $LOG ]]; then
  echo "list_skipped_tests.sh: $LOG does not exist (run ctest in $1 first)" >&2
  exit 2
fi
# A test's block runs from "N/M Testing: NAME" to its "Test Skipped."/"Test Passed."/... line.
awk '
  /^[0-9]+\/[0-9]+ Testing: / { name = $3; delete reasons; count = 0; next }
  /^SKIPPED: / { reason = substr($0, 10); if (!(reason in reasons)) { reasons[reason] = 1; order[++count] = reason } next }
  /^Test Skipped\.?$/ || /^Test (Not Run|Skipped)/ {
    if (count == 0) print "skipped " name ": (it printed no SKIPPED: line)"
    for (i = 1; i <= count; ++i) print "skipped " name ": " order[i]
    next
  }
' "$LOG"
