#!/usr/bin/env bash
# Lists every test a ctest run skipped, with its reason: the "SKIPPED: ..." lines the test printed
# (tests/support/gpu_test_main.cpp), once per test and reason, read from the JUnit file ctest
# wrote (ctest --output-junit FILE). ctest's console shows only "(Skipped)", and its LastTest.log
# records a skipped test as "Test Passed.", so the JUnit status is the one that tells.
#   scripts/list_skipped_tests.sh JUNIT.xml        prints nothing when no test was skipped
set -euo pipefail
if [[ $# -ne 1 || $1 == -h || $1 == --help ]]; then
  sed -n '2,6s/^# \{0,1\}//p' "$0"
  [[ $# -eq 1 ]] && exit 0
  exit 2
fi
if [[ ! -f $1 ]]; then
  echo "list_skipped_tests.sh: '$1' does not exist (run ctest --output-junit '$1' first)" >&2
  exit 2
fi
python3 - "$1" << 'PYTHON'
import sys
import xml.etree.ElementTree as ElementTree

for case in ElementTree.parse(sys.argv[1]).getroot().iter("testcase"):
    skipped = case.find("skipped")
    if skipped is None:
        continue
    output = case.findtext("system-out") or ""
    reasons = []
    for line in output.splitlines():
        if line.startswith("SKIPPED: ") and line[9:] not in reasons:
            reasons.append(line[9:])
    if not reasons:
        reasons = ["(it printed no SKIPPED: line; ctest says: %s)" % skipped.get("message", "")]
    for reason in reasons:
        print("skipped %s: %s" % (case.get("name"), reason))
PYTHON
