# Runs explorer/model/embed_step_pages.cmake on a made-up source tree and checks the generated
# source: pages embedded verbatim, diffs between neighbouring folders (steps 1-7 sharing
# v01_07), missing folders explained rather than fatal, timestamps stripped.
#
#   cmake -DSCRIPT=<embed_step_pages.cmake> -DWORK_DIR=<dir> -DDIFF=<diff> -P check_embed_step_pages.cmake
cmake_minimum_required(VERSION 3.21)

set(tree "${WORK_DIR}/tree")
file(REMOVE_RECURSE "${WORK_DIR}")
file(WRITE "${tree}/kernels/versions/v01_07/forward.cuh" "int tile = 64;\nint warps = 4;\n")
# Each snapshot names its own namespace and include paths: the diff writes both folders' names as
# vNN, so only the technique shows.
file(WRITE "${tree}/kernels/versions/v08/forward.cuh"
     "namespace flashscope::v08 {\n#include \"kernels/versions/v08/x.cuh\"\nint tile = 64;\nint warps = 8;\n")
# v09 is missing; v10 must be diffed against v08.
file(WRITE "${tree}/kernels/versions/v10/forward.cuh"
     "namespace flashscope::v10 {\n#include \"kernels/versions/v10/x.cuh\"\nint tile = 64;\nint warps = 8;\n// \"quoted\"; [brackets] \\backslash\n")
file(WRITE "${tree}/docs/versions/08.md" "# Step 8\n\nStatic swizzle; \"quotes\" [x] \\n\n")

set(generated "${WORK_DIR}/step_pages_data.cpp")
execute_process(COMMAND "${CMAKE_COMMAND}" "-DSOURCE_DIR=${tree}" "-DOUTPUT=${generated}"
                        "-DDIFF_EXECUTABLE=${DIFF}" "-DSTEPS=1;2;3;4;5;6;7;8;9;10"
                        "-DFOLDERS=v01_07;v01_07;v01_07;v01_07;v01_07;v01_07;v01_07;v08;v09;v10"
                        -P "${SCRIPT}"
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "embed_step_pages.cmake failed (${status})")
endif()
file(READ "${generated}" code)

function(expect pattern why)
  string(FIND "${code}" "${pattern}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "generated source lacks ${why}: ${pattern}")
  endif()
endfunction()
function(expect_not pattern why)
  string(FIND "${code}" "${pattern}" found)
  if(NOT found EQUAL -1)
    message(FATAL_ERROR "generated source should not contain ${why}: ${pattern}")
  endif()
endfunction()

expect("Static swizzle; \"quotes\" [x] \\n" "step 8's page, verbatim")
expect("diff -ruN kernels/versions/v01_07 kernels/versions/v08" "the v01_07 -> v08 summary")
expect("+int warps = 8;" "the v01_07 -> v08 change")
expect("(kernels/versions/v09 did not exist)" "the note on the missing v09")
expect("+// \"quoted\"; [brackets] \\backslash" "the v08 -> v10 change")
expect("kernels/versions/v09 was not in the source tree" "step 9's missing folder")
expect("step 3 differs from step 2 only in its kernel configuration" "the shared 1-7 tree")
expect("--- v01_07/forward.cuh\n" "a diff header without its timestamp")
expect_not("\t20" "diff timestamps")
expect_not("flashscope::v10" "a namespace rename between neighbours")
expect_not("kernels/versions/v10/x.cuh" "an include-path rename between neighbours")
message(STATUS "embed_step_pages.cmake output checked")
