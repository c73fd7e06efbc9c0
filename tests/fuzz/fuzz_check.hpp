// What the fuzz targets share: a property check that stops the run with the property and the
// input's text, so libFuzzer saves the input as a finding (crash-<sha1>) like any crash.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace flashscope::fuzz {

// Printable form of arbitrary bytes for a report: at most `limit` characters.
inline std::string printable(std::string_view text, std::size_t limit = 400) {
  std::string out;
  for (const char c : text.substr(0, limit)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte == '\n') {
      out += "\\n";
    } else if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    }
  }
  if (text.size() > limit) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

[[noreturn]] inline void property_failed(const char* property, const std::string& detail) {
  std::fprintf(stderr, "\nfuzz property violated: %s\n%s\n", property, detail.c_str());
  std::abort();
}

}  // namespace flashscope::fuzz

// Checks a property of the code under test; `detail` is evaluated only when it fails.
#define FUZZ_CHECK(condition, detail)                                                       \
  do {                                                                                      \
    if (!(condition)) ::flashscope::fuzz::property_failed(#condition, std::string(detail)); \
  } while (false)
