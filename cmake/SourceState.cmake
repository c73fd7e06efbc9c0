# Script mode (cmake -P), run at every build: writes OUTPUT, a C++ source defining
# flashscope::source_state(), with the commit of SOURCE_DIR and whether its tree differs from
# that commit. Stamping at build time rather than at configure time means a binary rebuilt after
# a commit or an edit names what it was really built from. The file is rewritten only when its
# content changes, so an unchanged tree recompiles nothing.
#
#   -DSOURCE_DIR=<repo> -DOUTPUT=<file.cpp> [-DCOMMIT_OVERRIDE=<sha>] [-DDIRTY_OVERRIDE=true|false]
#
# COMMIT_OVERRIDE names the commit of a tree without .git (an exported snapshot); its dirty state
# is then unknown unless DIRTY_OVERRIDE says it.

set(commit "")
set(dirty "unknown")
if(COMMIT_OVERRIDE)
  set(commit "${COMMIT_OVERRIDE}")
  # A full hash is shortened as git's own stamp below is, so every binary names commits alike.
  if(commit MATCHES "^[0-9a-f]+$")
    string(LENGTH "${commit}" commit_length)
    if(commit_length GREATER 12)
      string(SUBSTRING "${commit}" 0 12 commit)
    endif()
  endif()
  if(DIRTY_OVERRIDE MATCHES "^(true|false)$")
    set(dirty "${DIRTY_OVERRIDE}")
  endif()
else()
  execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE commit_result ERROR_QUIET)
  if(commit_result EQUAL 0 AND commit)
    # Modified, staged, deleted and untracked (not ignored) files all make the tree dirty: any of
    # them can change what is built (a new kernels/versions folder is an untracked file).
    execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain
                    OUTPUT_VARIABLE changes RESULT_VARIABLE status_result ERROR_QUIET)
    if(status_result EQUAL 0)
      if(changes STREQUAL "")
        set(dirty "false")
      else()
        set(dirty "true")
      endif()
    endif()
  else()
    set(commit "unknown")
  endif()
endif()

if(dirty STREQUAL "true")
  set(dirty_value "true")
elseif(dirty STREQUAL "false")
  set(dirty_value "false")
else()
  set(dirty_value "std::nullopt")
endif()
set(content "// Generated at build time by cmake/SourceState.cmake; do not edit.
#include \"profiling/results/source_state.hpp\"

namespace flashscope {

const SourceState& source_state() {
  static const SourceState state{\"${commit}\", ${dirty_value}};
  return state;
}

}  // namespace flashscope
")
set(previous "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" previous)
endif()
if(NOT previous STREQUAL content)
  file(WRITE "${OUTPUT}" "${content}")
endif()
