#!/usr/bin/env bash
# Static SASS instruction counts per kernel of a build (the columns of spec §6.4):
#   scripts/sass_counts.sh BUILD_DIR [ARCH]      (ARCH defaults to the first sm_ in the binary)
# One line per kernel: step, short form, then opcode counts. Needs cuobjdump and c++filt.
set -euo pipefail
BUILD=${1:?usage: sass_counts.sh BUILD_DIR [ARCH]}
BINARY="$BUILD/explorer/explorer"
ARCH_FILTER=${2:+--gpu-architecture $2}
OPCODES="HMMA HGMMA LDSM LDGSTS UTMALDG UTMASTG SYNCS IMAD IADD3 LOP3 SHF MOV CS2R LDL STL"
printf '%-8s %s\n' "kernel" "total $OPCODES"
# shellcheck disable=SC2086
cuobjdump --dump-sass $ARCH_FILTER "$BINARY" | awk -v opcodes="$OPCODES" '
  function flush() {
    if (name == "") return
    line = sprintf("%d", total)
    for (i = 1; i <= n; i++) line = line " " (count[ops[i]] + 0)
    print name "\t" line
    delete count; total = 0
  }
  BEGIN { n = split(opcodes, ops, " ") }
  /Function :/ { flush(); name = $3; next }
  /^ +\/\*[0-9a-f]+\*\/ / {
    instruction = $2
    if (instruction ~ /^@/) instruction = $3
    sub(/\..*/, "", instruction); sub(/;$/, "", instruction)
    total++; count[instruction]++
  }
  END { flush() }' | while IFS=$'\t' read -r mangled counts; do
  printf '%s\t%s\n' "$(echo "$mangled" | c++filt | sed -E 's/flashscope::KernelConfig//')" "$counts"
done
