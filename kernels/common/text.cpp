#include "kernels/common/text.hpp"

#include <cstdio>

namespace flashscope::text {

namespace {
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}
}  // namespace

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && is_space(text.back()))
    text.remove_suffix(1);
  return text;
}

std::vector<std::string> split_list(std::string_view text, char separator) {
  std::vector<std::string> items;
  while (true) {
    const std::size_t end = text.find(separator);
    items.emplace_back(trim(text.substr(0, end)));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return items;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string joined;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) joined += separator;
    joined += items[i];
  }
  return joined;
}

std::optional<std::int64_t> parse_decimal(std::string_view text, std::int64_t maximum,
                                          bool* out_of_range) {
  if (out_of_range != nullptr) *out_of_range = false;
  if (text.empty() || (text.size() > 1 && text.front() == '0')) return std::nullopt;
  std::int64_t value = 0;
  bool overflow = false;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    if (!overflow) {
      value = value * 10 + (c - '0');
      overflow = value > maximum;
    }
  }
  if (overflow) {
    if (out_of_range != nullptr) *out_of_range = true;
    return std::nullopt;
  }
  return value;
}

std::string escaped(std::string_view text, std::size_t limit) {
  std::string out;
  for (const char c : text.substr(0, limit)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    }
  }
  return out;
}

std::string quoted(std::string_view text, std::size_t limit) {
  std::string out = "'" + escaped(text, limit) + "'";
  if (text.size() > limit) out += " (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace flashscope::text
