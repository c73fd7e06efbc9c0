# Builds the instantiation generator with the host compiler and runs it at configure time, so
# the list of generated sources is known to CMake, along with every step's number and folder
# (FLASHSCOPE_ALL_STEPS, FLASHSCOPE_STEP_FOLDERS). Reconfiguration (and so regeneration) runs
# whenever configs/, the generator, or the set of kernels/versions folders changes.

set(_gen_dir "${CMAKE_BINARY_DIR}/generated")
set(_gen_exe "${_gen_dir}/flashscope-generate")
set(_gen_sources
    "${PROJECT_SOURCE_DIR}/configs/generator/generate_instantiations.cpp"
    "${PROJECT_SOURCE_DIR}/configs/config_sets.cpp"
    "${PROJECT_SOURCE_DIR}/kernels/common/config.cpp"
    "${PROJECT_SOURCE_DIR}/kernels/common/problem.cpp"
    "${PROJECT_SOURCE_DIR}/kernels/common/problem_axes.cpp"
    "${PROJECT_SOURCE_DIR}/kernels/common/text.cpp"
    "${PROJECT_SOURCE_DIR}/kernels/common/registry.cpp"
    "${PROJECT_SOURCE_DIR}/configs/launch_validation.cpp")
# The step descriptors (kernels/versions/*/step.hpp, listed in kernels/versions/steps.hpp) are
# compiled into the generator: editing one reconfigures.
file(GLOB _gen_step_descriptors CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/kernels/versions/*/step.hpp")
set(_gen_inputs ${_gen_sources} ${_gen_step_descriptors}
    "${PROJECT_SOURCE_DIR}/configs/config_sets.hpp"
    "${PROJECT_SOURCE_DIR}/kernels/common/config.hpp"
    "${PROJECT_SOURCE_DIR}/kernels/common/problem.hpp"
    "${PROJECT_SOURCE_DIR}/kernels/common/problem_axes.hpp"
    "${PROJECT_SOURCE_DIR}/kernels/common/registry.hpp"
    "${PROJECT_SOURCE_DIR}/configs/launch_validation.hpp"
    "${PROJECT_SOURCE_DIR}/kernels/common/step_descriptor.hpp"
    "${PROJECT_SOURCE_DIR}/kernels/common/step_rules.hpp"
    "${PROJECT_SOURCE_DIR}/kernels/versions/steps.hpp"
    "${PROJECT_SOURCE_DIR}/kernels/versions")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_gen_inputs})

file(MAKE_DIRECTORY "${_gen_dir}")
set(_gen_includes "-I${PROJECT_SOURCE_DIR}")
foreach(_dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
  list(APPEND _gen_includes "-I${_dir}")
endforeach()
execute_process(
  COMMAND "${CMAKE_CXX_COMPILER}" -std=c++20 -O1 ${_gen_includes} ${_gen_sources} -o "${_gen_exe}"
  RESULT_VARIABLE _gen_build_result
  ERROR_VARIABLE _gen_build_error)
if(NOT _gen_build_result EQUAL 0)
  message(FATAL_ERROR "flashscope: building the instantiation generator failed:\n${_gen_build_error}")
endif()

# A source tree without .git (an exported snapshot) can name its commit with
# -DFLASHSCOPE_GIT_COMMIT=<sha>.
if(NOT FLASHSCOPE_GIT_COMMIT)
  execute_process(
    COMMAND git -C "${PROJECT_SOURCE_DIR}" rev-parse --short=12 HEAD
    OUTPUT_VARIABLE FLASHSCOPE_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT FLASHSCOPE_GIT_COMMIT)
  set(FLASHSCOPE_GIT_COMMIT "unknown")
endif()

# The Hopper steps (17+) are built when the architectures name the arch-specific sm_90a target
# ("90a", "90a-real"); nvcc compiles wgmma and setmaxnreg for no other.
set(FLASHSCOPE_HOPPER_TARGET OFF)
foreach(_arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
  if(_arch MATCHES "^90a(-real|-virtual)?$")
    set(FLASHSCOPE_HOPPER_TARGET ON)
  endif()
endforeach()

execute_process(
  COMMAND "${_gen_exe}" --set "${FLASHSCOPE_KERNEL_SET}" --steps "${FLASHSCOPE_STEPS}"
          --tune-steps "${FLASHSCOPE_TUNE_STEPS}"
          --versions-dir "${PROJECT_SOURCE_DIR}/kernels/versions" --out-dir "${_gen_dir}"
          --architectures "${CMAKE_CUDA_ARCHITECTURES}" --git-commit "${FLASHSCOPE_GIT_COMMIT}"
          --hopper-target "${FLASHSCOPE_HOPPER_TARGET}"
  RESULT_VARIABLE _gen_result
  OUTPUT_VARIABLE _gen_output
  ERROR_VARIABLE _gen_error)
if(NOT _gen_result EQUAL 0)
  message(FATAL_ERROR "flashscope: ${_gen_error}")
endif()
message(STATUS "${_gen_output}")
include("${_gen_dir}/instantiations.cmake")
set(FLASHSCOPE_REGISTRY_SOURCE "${_gen_dir}/registered_kernels.cpp")
