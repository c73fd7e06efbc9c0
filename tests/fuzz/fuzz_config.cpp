// Fuzz target: the config parser (kernels/common/config.hpp) on arbitrary text, as `--config`,
// `explorer check`, result CSVs and profiler output hand it over.
//
// Properties: parse_config either returns a record or throws ConfigParseError (nothing else, no
// crash); whatever it returns prints with to_short_form and re-parses, through parse_short_form
// and parse_config alike, to the same record; and that printed form is canonical (printing the
// re-parsed record gives the same text). Only the public API is used, so the target keeps
// working when the record gains fields.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/common/config.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using flashscope::ConfigParseError;
using flashscope::KernelConfig;
using flashscope::fuzz::printable;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  KernelConfig parsed{};
  try {
    parsed = flashscope::parse_config(text);
  } catch (const ConfigParseError& error) {
    const std::string message = error.what();
    FUZZ_CHECK(message.starts_with("cannot parse config \""),
               "a parse error that does not name the text: " + printable(message));
    return 0;
  }
  const std::string printed = flashscope::to_short_form(parsed);
  const auto reparse = [&](auto parser, const char* name) {
    try {
      return parser(printed);
    } catch (const ConfigParseError& error) {
      flashscope::fuzz::property_failed("the printed form of a parsed config parses again",
                                        std::string(name) + " rejects \"" + printed +
                                            "\" printed from input \"" + printable(text) +
                                            "\": " + error.what());
    }
  };
  const KernelConfig via_short_form = reparse(
      [](std::string_view t) { return flashscope::parse_short_form(t); }, "parse_short_form");
  const KernelConfig via_parse_config =
      reparse([](std::string_view t) { return flashscope::parse_config(t); }, "parse_config");
  FUZZ_CHECK(via_short_form == parsed, "input \"" + printable(text) + "\" printed as \"" + printed +
                                           "\" re-parses (parse_short_form) as \"" +
                                           flashscope::to_short_form(via_short_form) + "\"");
  FUZZ_CHECK(via_parse_config == parsed, "input \"" + printable(text) + "\" printed as \"" +
                                             printed +
                                             "\" re-parses (parse_config) as a different record");
  FUZZ_CHECK(flashscope::to_short_form(via_short_form) == printed,
             "the short form \"" + printed + "\" is not canonical");
  return 0;
}
