# Runs the explorer under a virtual X server and checks what came out.
#
#   cmake -DEXPLORER=<exe> -DXVFB_RUN=<xvfb-run> -DOUTPUT=<png> -DARGS=<arg|arg|...>
#         [-DCHECKER=<check_screenshot> -DMIN_COLOURS=<n> -DMIN_FOREGROUND_PERCENT=<p>]
#         [-DEXPECT_OUTPUT=<regex>] [-DSKIP_OUTPUT=<regex>]
#         [-DMAX_MEDIAN_FRAME_MS=<ms>] -P run_explorer_gui_test.cmake
#
# The explorer must exit 0 and write OUTPUT; the screenshot must pass CHECKER (enough colours
# and enough pixels off the background, so not blank); its output must match
# EXPECT_OUTPUT (when its output matches SKIP_OUTPUT instead, e.g. no GPU for a sweep, the test
# prints "SKIPPED: " and the match, which ctest reports as skipped, unless the environment has
# FLASHSCOPE_REQUIRE_GPU=1, which makes it a failure); with --bench-frames, the printed median frame time (a
# scheduler hiccup of a shared 2-core machine must not decide the verdict) must stay under
# MAX_MEDIAN_FRAME_MS.
cmake_minimum_required(VERSION 3.21)

foreach(required EXPLORER XVFB_RUN OUTPUT)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "run_explorer_gui_test.cmake: -D${required}=... is required")
  endif()
endforeach()

string(REPLACE "|" ";" ARGS "${ARGS}")
get_filename_component(output_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${output_dir}")
file(REMOVE "${OUTPUT}")

# A screen larger than the window, 24-bit so antialiased text keeps its colours.
execute_process(
  COMMAND "${XVFB_RUN}" -a -s "-screen 0 1920x1200x24"
          "${EXPLORER}" ${ARGS} --screenshot "${OUTPUT}"
  RESULT_VARIABLE status
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)
message("${output}")
if(DEFINED SKIP_OUTPUT AND output MATCHES "${SKIP_OUTPUT}")
  # A GPU host sets FLASHSCOPE_REQUIRE_GPU=1 (scripts/gpu_host.sh): there a skip is a failure.
  if("$ENV{FLASHSCOPE_REQUIRE_GPU}" STREQUAL "1")
    message(FATAL_ERROR "FLASHSCOPE_REQUIRE_GPU=1, but: ${CMAKE_MATCH_0}")
  endif()
  message("SKIPPED: ${CMAKE_MATCH_0}")
  return()
endif()
if(NOT status EQUAL 0)
  message(FATAL_ERROR "explorer exited with ${status}")
endif()
if(NOT EXISTS "${OUTPUT}")
  message(FATAL_ERROR "explorer did not write ${OUTPUT}")
endif()

if(DEFINED EXPECT_OUTPUT AND NOT output MATCHES "${EXPECT_OUTPUT}")
  message(FATAL_ERROR "explorer output does not match: ${EXPECT_OUTPUT}")
endif()

if(DEFINED CHECKER)
  execute_process(COMMAND "${CHECKER}" "${OUTPUT}" "${MIN_COLOURS}" "${MIN_FOREGROUND_PERCENT}"
                  RESULT_VARIABLE status
                  OUTPUT_VARIABLE checker_output ERROR_VARIABLE checker_output)
  message("${checker_output}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "screenshot ${OUTPUT} looks blank")
  endif()
endif()

if(DEFINED MAX_MEDIAN_FRAME_MS)
  if(NOT output MATCHES "median frame time ([0-9.]+) ms")
    message(FATAL_ERROR "no frame time in the explorer's output")
  endif()
  if(CMAKE_MATCH_1 GREATER MAX_MEDIAN_FRAME_MS)
    message(FATAL_ERROR "median frame time ${CMAKE_MATCH_1} ms exceeds ${MAX_MEDIAN_FRAME_MS} ms")
  endif()
endif()
