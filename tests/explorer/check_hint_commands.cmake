# Every command the explorer's windows suggest works as written (issue 22, "hints that don't
# work"): the commands are read from explorer/model/hints.hpp, the one place the GUI takes them
# from, and run against the built binary in an empty folder.
#
#   cmake -DEXPLORER=<exe> -DHINTS=<hints.hpp> -DWORK_DIR=<dir> -DSWEEP_SAMPLE=<csv>
#         -DPEAK_SAMPLE=<csv> [-DXVFB_RUN=<xvfb-run>] -P check_hint_commands.cmake
#
# A measuring command (--csv, peak) runs with no GPU visible (CUDA_VISIBLE_DEVICES=-1), so it
# stops at the device on every host: it must get that far, i.e. its arguments parse (no usage
# error, whose exit codes are 2 and CLI11's 105-109). A command that opens the window runs under
# Xvfb with --screenshot and must exit 0; the result files it names stand for files the user made
# with the measuring hints, so they are copied in first from shipped results (PEAK_SAMPLE for a
# name with "peak" in it, SWEEP_SAMPLE for any other), since a --results file that does not exist
# is a usage error.
cmake_minimum_required(VERSION 3.21)

foreach(required EXPLORER HINTS WORK_DIR SWEEP_SAMPLE PEAK_SAMPLE)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "check_hint_commands.cmake: -D${required}=... is required")
  endif()
endforeach()

file(READ "${HINTS}" header)
string(REGEX MATCHALL "\"explorer [^\"]*\"" literals "${header}")
list(LENGTH literals count)
if(count LESS 3)
  message(FATAL_ERROR "found only ${count} hint commands in ${HINTS}")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(failures "")
foreach(literal IN LISTS literals)
  string(REGEX REPLACE "^\"explorer (.*)\"$" "\\1" arguments "${literal}")
  separate_arguments(arguments UNIX_COMMAND "${arguments}")
  if(arguments MATCHES "--csv|^peak")
    execute_process(COMMAND "${CMAKE_COMMAND}" -E env CUDA_VISIBLE_DEVICES=-1
                            "${EXPLORER}" ${arguments}
                    WORKING_DIRECTORY "${WORK_DIR}"
                    RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
    if(status EQUAL 2 OR (status GREATER_EQUAL 105 AND status LESS_EQUAL 109) OR
       NOT output MATCHES "CUDA")
      list(APPEND failures "${literal}: exit ${status}: ${output}")
    else()
      message("ok (stops at the device, as without a GPU): ${literal}")
    endif()
  elseif(DEFINED XVFB_RUN)
    foreach(argument IN LISTS arguments)
      if(argument MATCHES "\\.csv$" AND NOT EXISTS "${WORK_DIR}/${argument}")
        if(argument MATCHES "peak")
          configure_file("${PEAK_SAMPLE}" "${WORK_DIR}/${argument}" COPYONLY)
        else()
          configure_file("${SWEEP_SAMPLE}" "${WORK_DIR}/${argument}" COPYONLY)
        endif()
      endif()
    endforeach()
    execute_process(COMMAND "${XVFB_RUN}" -a -s "-screen 0 1920x1200x24" "${EXPLORER}"
                            ${arguments} --screenshot "${WORK_DIR}/hint.png"
                    WORKING_DIRECTORY "${WORK_DIR}"
                    RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
    if(NOT status EQUAL 0)
      list(APPEND failures "${literal}: exit ${status}: ${output}")
    else()
      message("ok (opens): ${literal}")
    endif()
  else()
    message("not run (no xvfb-run to open a window): ${literal}")
  endif()
endforeach()
if(failures)
  list(JOIN failures "\n" text)
  message(FATAL_ERROR "hint commands that do not work as written:\n${text}")
endif()
