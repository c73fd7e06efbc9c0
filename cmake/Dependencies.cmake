# Header-only dependencies: Debian's packages where installed (libcli11-dev, doctest-dev),
# otherwise copies in .deps/include that travel with the tree to GPU hosts lacking them
# (scripts/gpu_host.sh documents how that folder is filled).
set(FLASHSCOPE_DEPS_INCLUDE "${PROJECT_SOURCE_DIR}/.deps/include")

function(flashscope_header_only_fallback target header)
  if(TARGET ${target})
    return()
  endif()
  if(EXISTS "${FLASHSCOPE_DEPS_INCLUDE}/${header}")
    add_library(${target} INTERFACE IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES
                          INTERFACE_INCLUDE_DIRECTORIES "${FLASHSCOPE_DEPS_INCLUDE}")
    message(STATUS "flashscope: ${target} from ${FLASHSCOPE_DEPS_INCLUDE}/${header}")
  else()
    message(FATAL_ERROR "flashscope: ${target} not found: install its Debian package or copy "
                        "${header} into ${FLASHSCOPE_DEPS_INCLUDE}")
  endif()
endfunction()

find_package(CLI11 CONFIG QUIET)
flashscope_header_only_fallback(CLI11::CLI11 CLI/CLI.hpp)
if(FLASHSCOPE_BUILD_TESTS)
  find_package(doctest CONFIG QUIET)
  flashscope_header_only_fallback(doctest::doctest doctest/doctest.h)
endif()
