# Sanitizer and fuzzer builds of the host code (docs/hardening.md). Only C++ is instrumented: the
# CUDA kernels are checked with compute-sanitizer on a GPU host instead, and nvcc's host stubs
# are generated code.
#
#   FLASHSCOPE_SANITIZE=address,undefined   -fsanitize=... on every C++ compile and every C++
#                                           link (GCC or Clang), with _GLIBCXX_ASSERTIONS; a
#                                           report stops the program, so a test that triggers
#                                           one fails
#   FLASHSCOPE_BUILD_FUZZERS=ON             the libFuzzer targets of tests/fuzz (Clang only);
#                                           the C++ code is compiled with coverage hooks
#                                           (-fsanitize=fuzzer-no-link) so libFuzzer sees the
#                                           parsers' branches, not only the fuzz targets'

set(FLASHSCOPE_SANITIZE "" CACHE STRING
    "Sanitizers for the host C++ code, e.g. address,undefined (empty: none)")
option(FLASHSCOPE_BUILD_FUZZERS "Build the libFuzzer targets in tests/fuzz (needs Clang)" OFF)

if(FLASHSCOPE_SANITIZE)
  # -g1: line tables, so reports name files and lines whatever the build type (scripts/sanitize.sh
  # builds Release, as scripts/test.sh does, so the CUDA objects are shared through ccache),
  # without full debug information, which more than doubled every object (compare.cpp: 3.9 MB
  # with -g, 1.7 MB with -g1) and the folder with it.
  set(flashscope_sanitize_flags -fsanitize=${FLASHSCOPE_SANITIZE} -fno-sanitize-recover=all
                                -fno-omit-frame-pointer -g1)
  # GCC leaves float-to-int overflow out of -fsanitize=undefined (Clang includes it); a CSV
  # value cast to int is exactly where that would happen.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND FLASHSCOPE_SANITIZE MATCHES "undefined")
    list(APPEND flashscope_sanitize_flags -fsanitize=float-cast-overflow)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${flashscope_sanitize_flags}>"
                      "$<$<COMPILE_LANGUAGE:CXX>:-D_GLIBCXX_ASSERTIONS>")
  add_link_options("$<$<LINK_LANGUAGE:CXX>:${flashscope_sanitize_flags}>")
  message(STATUS "flashscope: host C++ code built with -fsanitize=${FLASHSCOPE_SANITIZE} "
                 "(CUDA code is not instrumented)")
endif()

if(FLASHSCOPE_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "flashscope: FLASHSCOPE_BUILD_FUZZERS needs Clang's libFuzzer, but the "
                        "C++ compiler is ${CMAKE_CXX_COMPILER_ID} (configure with "
                        "-DCMAKE_CXX_COMPILER=clang++-14, or run scripts/fuzz.sh)")
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>")
endif()
