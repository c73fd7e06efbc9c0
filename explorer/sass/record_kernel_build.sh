#!/usr/bin/env bash
# The kernel instantiations' compiler launcher (explorer/sass/CMakeLists.txt): runs the compile,
# keeps its ptxas resource report (nvcc --resource-usage) and, with a disassembler, the SASS of
# the object, through `flashscope-sass record`.
#
#   record_kernel_build.sh TOOL ARTIFACT_DIR CUOBJDUMP|"" ECHO_PTXAS(0|1) -- COMPILER ARGS...
#
# The resource lines ("ptxas info ...") are kept out of the build output unless ECHO_PTXAS is 1
# (FLASHSCOPE_PTXAS_VERBOSE); so are ptxas's spill and local-memory warnings of steps 1-16
# (instantiations/s01 ... s16), which the spec expects (docs/spec/kernel-progression.md §7.2:
# the 128-row picks sit at the 255-register ceiling; configure says so once). Every other warning
# and error passes through, the Hopper steps' spills included, and the full report is recorded.
set -uo pipefail
[[ $# -ge 6 && $5 == -- ]] || { echo "usage: $0 TOOL ARTIFACT_DIR CUOBJDUMP ECHO -- COMPILER..." >&2; exit 2; }
tool=$1 artifact=$2 cuobjdump=$3 echo_ptxas=$4
shift 5
source_file="" object_file=""
args=("$@")
for ((i = 0; i < ${#args[@]} - 1; i++)); do
  case ${args[i]} in
    -c) source_file=${args[i + 1]} ;;
    -o) object_file=${args[i + 1]} ;;
  esac
done
log=$(mktemp "${TMPDIR:-/tmp}/flashscope-ptxas.XXXXXX")
trap 'rm -f "$log"' EXIT
"$@" 2> "$log"
status=$?
hidden='^ptxas info|^ +[0-9]+ bytes stack frame'
if [[ $source_file =~ /s([0-9]+)/[^/]*$ ]] && ((10#${BASH_REMATCH[1]} <= 16)); then
  hidden+='|^ptxas warning : (Registers are spilled to local memory|Local memory used) (in|for) function'
fi
if [[ $echo_ptxas == 1 ]]; then
  cat "$log" >&2
else
  grep -v -E "$hidden" "$log" >&2
fi
if [[ $status -eq 0 && -n $source_file && -n $object_file ]]; then
  "$tool" record --source "$source_file" --object "$object_file" --ptxas-log "$log" \
    --out "$artifact" ${cuobjdump:+--cuobjdump "$cuobjdump"} || status=$?
fi
exit $status
