// Small text helpers every layer shares, written once: list splitting, trimming, joining and a
// strict decimal parser for values that must read back exactly as written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashscope::text {

// `text` without leading and trailing whitespace (space, tab, CR, LF, FF, VT).
std::string_view trim(std::string_view text);

// The comma-separated items of `text`, each trimmed. An empty item ("64,,128", a trailing comma)
// is kept as "" so that callers can name it as an error; "" yields one empty item.
std::vector<std::string> split_list(std::string_view text, char separator = ',');

// Items joined with `separator` ("64,128").
std::string join(const std::vector<std::string>& items, std::string_view separator = ",");

// A decimal integer with no sign, no leading zero (but "0"), no spaces: the spelling the CSV
// writer and the command line use. Returns nullopt for anything else; `out_of_range` is set when
// the digits are valid but exceed `maximum`.
std::optional<std::int64_t> parse_decimal(std::string_view text, std::int64_t maximum,
                                          bool* out_of_range = nullptr);

// The first `limit` bytes of `text` as a message shows them: printable ASCII as is, other bytes
// (a NUL, a UTF-8 BOM) as \xHH.
std::string escaped(std::string_view text, std::size_t limit = 80);
// A value as a message quotes it: escaped() in single quotes, with the total size noted when it
// was cut.
std::string quoted(std::string_view text, std::size_t limit = 80);

}  // namespace flashscope::text
