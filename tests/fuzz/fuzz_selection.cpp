// Fuzz target: the selection-key and step-list parsers of configs/config_sets.hpp on arbitrary
// text, as `--set`, `--list-set`, `--steps` and FLASHSCOPE_STEPS hand it over.
//
// Properties, for every input:
//  * configs::select either yields configs or throws std::invalid_argument; every config it
//    yields can be instantiated (is_statically_valid) and prints as a short form that parses
//    back to it (whatever sets later steps add, a key never names a config that cannot exist);
//  * configs::parse_step_list either throws std::invalid_argument or yields a non-empty, sorted
//    list of distinct steps the descriptors declare (kernels/versions/steps.hpp: the forward
//    steps configs::kFirstStep..configs::kLastStep and the backward steps from 101) that,
//    written back as "a,b,c", parses to the same list.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "configs/config_sets.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace configs = flashscope::configs;
using flashscope::KernelConfig;
using flashscope::fuzz::printable;

namespace {

void check_selection(std::string_view key) {
  std::vector<KernelConfig> selected;
  try {
    selected = configs::select(key);
  } catch (const std::invalid_argument& error) {
    FUZZ_CHECK(
        std::string_view(error.what()).find("key") != std::string_view::npos,
        "a selection error that does not say it is about the key: " + printable(error.what()));
    return;
  }
  for (const KernelConfig& c : selected) {
    const std::string printed = flashscope::to_short_form(c);
    FUZZ_CHECK(flashscope::is_statically_valid(c),
               "key \"" + printable(key) + "\" selects \"" + printed +
                   "\", which breaks: " + flashscope::static_config_violation(c));
    FUZZ_CHECK(
        flashscope::parse_short_form(printed) == c,
        "key \"" + printable(key) + "\" selects \"" + printed + "\", which re-parses differently");
  }
}

std::string join(const std::vector<int>& steps) {
  std::string text;
  for (const int step : steps)
    text += (text.empty() ? "" : ",") + std::to_string(step);
  return text;
}

void check_step_list(std::string_view text) {
  std::vector<int> steps;
  try {
    steps = configs::parse_step_list(text);
  } catch (const std::invalid_argument& error) {
    FUZZ_CHECK(std::string_view(error.what()).starts_with("invalid step list"),
               "a step-list error that does not say so: " + printable(error.what()));
    return;
  }
  const std::string detail = "\"" + printable(text) + "\" -> \"" + join(steps) + "\"";
  FUZZ_CHECK(!steps.empty(), "an accepted step list is empty: " + detail);
  FUZZ_CHECK(std::is_sorted(steps.begin(), steps.end()) &&
                 std::adjacent_find(steps.begin(), steps.end()) == steps.end(),
             "steps not sorted and distinct: " + detail);
  FUZZ_CHECK(std::all_of(steps.begin(), steps.end(),
                         [](int step) {
                           return flashscope::configs::find_step_descriptor(step) != nullptr;
                         }),
             "a step no descriptor declares: " + detail);
  std::vector<int> again;
  try {
    again = configs::parse_step_list(join(steps));
  } catch (const std::invalid_argument& error) {
    flashscope::fuzz::property_failed("a written-back step list parses again",
                                      detail + ": " + error.what());
  }
  FUZZ_CHECK(again == steps, "written back and re-parsed differently: " + detail);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_selection(text);
  check_step_list(text);
  return 0;
}
