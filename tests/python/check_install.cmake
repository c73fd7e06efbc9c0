# `cmake --install` of component python into a fresh prefix, then the package imported from there
# (not from the build tree): the module, its version and its type stubs are installed (the rules
# `pip install .` uses through scikit-build-core; docs/python.md, "Installing with pip").
#   cmake -DBUILD_DIR=... -DPREFIX=... -DPYTHON=... -DINSTALL_DIR=python -P check_install.cmake
foreach(variable BUILD_DIR PREFIX PYTHON INSTALL_DIR)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "check_install.cmake: -D${variable}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --component python
                        --prefix "${PREFIX}"
                RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${status}):\n${output}")
endif()
set(package "${PREFIX}/${INSTALL_DIR}/flashscope")
foreach(file __init__.py __init__.pyi _core.pyi py.typed)
  if(NOT EXISTS "${package}/${file}")
    message(FATAL_ERROR "the install lacks ${package}/${file}:\n${output}")
  endif()
endforeach()
file(GLOB modules "${package}/_core*.so")
if(NOT modules)
  message(FATAL_ERROR "the install lacks the extension ${package}/_core*.so:\n${output}")
endif()
# Import from the prefix alone: the build tree is not on the path, and the current folder is the
# prefix, so `flashscope` can only come from there.
execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env --unset=PYTHONPATH "PYTHONPATH=${PREFIX}/${INSTALL_DIR}"
          "${PYTHON}" -c
          "import flashscope, pathlib; p = pathlib.Path(flashscope.__file__).resolve(); assert p.parent == pathlib.Path('${package}').resolve(), p; print('installed flashscope', flashscope.__version__, 'with', len(flashscope.kernels()), 'kernels from', p.parent)"
  WORKING_DIRECTORY "${PREFIX}"
  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
message("${output}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "importing the installed package failed (${status})")
endif()
file(REMOVE_RECURSE "${PREFIX}")
