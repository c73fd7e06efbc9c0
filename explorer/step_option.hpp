// How the `--step` options read a step: as the views, the CSV and the docs write it ("7", "B1")
// or by number (a backward step's "101"). CLI11 converts the option to an int after this
// transform, which rewrites a step's name into its number.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "configs/config_sets.hpp"

namespace flashscope::cli {

inline CLI::Validator step_name_transform() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (const std::optional<int> step = configs::parse_step(text)) {
          text = std::to_string(*step);
          return {};
        }
        // A number no step has is left to the mode's own check, which names the steps there are;
        // a "B" name would otherwise get CLI11's bare "Could not convert".
        if (!text.empty() && (text.front() == 'B' || text.front() == 'b'))
          return "'" + text + "' is no backward step of this build (they are " +
                 step_name(kFirstBackwardStep) + "-" + step_name(configs::kLastBackwardStep) + ")";
        return {};
      },
      "STEP", "step name");
}

}  // namespace flashscope::cli
