// Checks a screenshot is not blank. A failed or empty render is one flat colour; a drawn view
// has many colours and a share of pixels that differ from the background (its most common
// colour).
//
//   check_screenshot FILE.png MIN_COLOURS MIN_FOREGROUND_PERCENT
#include <stb_image.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s FILE.png MIN_COLOURS MIN_FOREGROUND_PERCENT\n", argv[0]);
    return 2;
  }
  int width = 0, height = 0, channels = 0;
  unsigned char* pixels = stbi_load(argv[1], &width, &height, &channels, 3);
  if (pixels == nullptr) {
    std::fprintf(stderr, "%s: cannot read PNG: %s\n", argv[1], stbi_failure_reason());
    return 1;
  }
  std::unordered_map<std::uint32_t, long> counts;
  const long total = static_cast<long>(width) * height;
  for (long i = 0; i < total; ++i) {
    const unsigned char* p = pixels + 3 * i;
    ++counts[static_cast<std::uint32_t>(p[0]) << 16 | static_cast<std::uint32_t>(p[1]) << 8 | p[2]];
  }
  stbi_image_free(pixels);
  long background = 0;
  for (const auto& [colour, count] : counts)
    background = std::max(background, count);
  const double foreground_percent =
      total > 0 ? 100.0 * static_cast<double>(total - background) / static_cast<double>(total)
                : 0.0;

  const long min_colours = std::strtol(argv[2], nullptr, 10);
  const double min_foreground = std::strtod(argv[3], nullptr);
  std::printf("%s: %dx%d, %zu distinct colours (minimum %ld), %.1f%% foreground (minimum %.1f%%)\n",
              argv[1], width, height, counts.size(), min_colours, foreground_percent,
              min_foreground);
  return static_cast<long>(counts.size()) >= min_colours && foreground_percent >= min_foreground
             ? 0
             : 1;
}
