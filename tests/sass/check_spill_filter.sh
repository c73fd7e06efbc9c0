#!/usr/bin/env bash
# record_kernel_build.sh keeps the spill and local-memory warnings that the spec expects (steps
# 1-16) out of the build output and passes every other one through: a stand-in compiler prints
# ptxas's warnings for an instantiation of step 7 and of step 20.
#   check_spill_filter.sh RECORD_KERNEL_BUILD_SH
set -euo pipefail
launcher=$1
fake_compiler() {
  cat >&2 << 'WARNINGS'
ptxas warning : Local memory used for function '_ZN10flashscope3v07kernel', size of stack frame: 96 bytes
ptxas warning : Registers are spilled to local memory in function '_ZN10flashscope3v07kernel', 96 bytes spill stores, 108 bytes spill loads
ptxas info    : Used 255 registers
ptxas warning : an unexpected warning
WARNINGS
}
export -f fake_compiler
run() {  # the launcher's output for a source of step folder $1 (no recording: TOOL is true)
  "$launcher" true "" "" "${2:-0}" -- bash -c fake_compiler x -c "generated/instantiations/$1/k.cu" -o k.o 2>&1
}
ampere=$(run s07)
hopper=$(run s20)
verbose=$(run s07 1)
fail() { echo "check_spill_filter: $*" >&2; exit 1; }
[[ $ampere == "ptxas warning : an unexpected warning" ]] || fail "step 7 printed: $ampere"
grep -q "Registers are spilled" <<< "$hopper" || fail "step 20's spill warning was hidden"
grep -q "Local memory used" <<< "$hopper" || fail "step 20's local-memory warning was hidden"
grep -q "an unexpected warning" <<< "$hopper" || fail "step 20's other warning was hidden"
grep -q "ptxas info" <<< "$hopper" && fail "step 20 printed ptxas info"
grep -q "Registers are spilled" <<< "$verbose" || fail "ECHO_PTXAS=1 hid step 7's spills"
echo "check_spill_filter: steps 1-16's expected spill warnings hidden, the others printed"
