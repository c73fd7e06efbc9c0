# Finds what the desktop explorer needs (Dear ImGui with its GLFW + OpenGL3 backends, GLFW 3.3,
# OpenGL, stb for PNG screenshots) and sets FLASHSCOPE_GUI_AVAILABLE. Include it from
# explorer/CMakeLists.txt before adding explorer/plot and explorer/gui; without these packages
# the explorer is built headless (`explorer --csv` still works) and the GUI tests are skipped.
#
# The result is a cache variable so tests/explorer, outside this directory, sees it too.

set(flashscope_gui_missing "")
if(DEFINED FLASHSCOPE_BUILD_GUI AND NOT FLASHSCOPE_BUILD_GUI)
  set(FLASHSCOPE_GUI_AVAILABLE OFF CACHE INTERNAL "Whether the explorer GUI is built")
  message(STATUS "flashscope: explorer GUI not built (FLASHSCOPE_BUILD_GUI is OFF)")
  return()
endif()

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(IMGUI QUIET IMPORTED_TARGET GLOBAL imgui)
  pkg_check_modules(STB QUIET IMPORTED_TARGET GLOBAL stb)
endif()
find_package(glfw3 3.3 QUIET CONFIG)
set(OpenGL_GL_PREFERENCE GLVND)
find_package(OpenGL QUIET)
if(NOT IMGUI_FOUND)
  list(APPEND flashscope_gui_missing "imgui (libimgui-dev, found through pkg-config)")
endif()
if(NOT STB_FOUND)
  list(APPEND flashscope_gui_missing "stb (libstb-dev)")
endif()
if(NOT glfw3_FOUND)
  list(APPEND flashscope_gui_missing "glfw3 >= 3.3 (libglfw3-dev)")
endif()
if(NOT OpenGL_FOUND)
  list(APPEND flashscope_gui_missing "OpenGL (libgl-dev)")
endif()

if(flashscope_gui_missing)
  set(FLASHSCOPE_GUI_AVAILABLE OFF CACHE INTERNAL "Whether the explorer GUI is built")
  list(JOIN flashscope_gui_missing ", " flashscope_gui_missing_text)
  message(STATUS "flashscope: explorer GUI not built (missing: ${flashscope_gui_missing_text}); "
                 "`explorer --csv` is unaffected")
else()
  set(FLASHSCOPE_GUI_AVAILABLE ON CACHE INTERNAL "Whether the explorer GUI is built")
  message(STATUS "flashscope: explorer GUI enabled (Dear ImGui ${IMGUI_VERSION}, GLFW "
                 "${glfw3_VERSION})")
endif()
