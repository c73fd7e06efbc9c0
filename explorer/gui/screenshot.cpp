#include "explorer/gui/screenshot.hpp"

#include <GLFW/glfw3.h>  // includes the system's OpenGL header
#include <stb_image_write.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace flashscope::explorer::gui {

std::string save_framebuffer_png(const std::string& path, int width, int height) {
  if (width <= 0 || height <= 0) return "the window has no framebuffer to capture";
  constexpr int kChannels = 4;
  const std::size_t row_bytes = static_cast<std::size_t>(width) * kChannels;
  std::vector<std::uint8_t> pixels(row_bytes * static_cast<std::size_t>(height));
  glFinish();
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  if (const GLenum error = glGetError(); error != GL_NO_ERROR)
    return "glReadPixels failed with OpenGL error " + std::to_string(error);
  // OpenGL's first row is the bottom one; PNG's is the top.
  std::vector<std::uint8_t> flipped(pixels.size());
  for (int y = 0; y < height; ++y) {
    const auto source = pixels.begin() + static_cast<std::ptrdiff_t>(row_bytes) * (height - 1 - y);
    std::copy(source, source + static_cast<std::ptrdiff_t>(row_bytes),
              flipped.begin() + static_cast<std::ptrdiff_t>(row_bytes) * y);
  }
  if (!stbi_write_png(path.c_str(), width, height, kChannels, flipped.data(),
                      static_cast<int>(row_bytes)))
    return "cannot write " + path;
  return {};
}

}  // namespace flashscope::explorer::gui
