// Reads back the current OpenGL framebuffer and writes it as a PNG (for --screenshot).
#pragma once

#include <string>

namespace flashscope::explorer::gui {

// Reads the back buffer of the current context (call after rendering, before swapping).
// Returns an error message, or empty on success.
std::string save_framebuffer_png(const std::string& path, int width, int height);

}  // namespace flashscope::explorer::gui
