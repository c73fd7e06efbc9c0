// Facts about the steps that are names, not measurements: their titles (configs/, spec §1.5 and
// hopper-track.md §3) and how one step's kernel configuration differs from another's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/config.hpp"

namespace flashscope::explorer {

// "Swizzling" for step 2, B5's title for 105; empty for a number no step of this build has (a
// result file may hold rows of a step from another build or a reverted experiment).
std::string_view step_title(int step);

// The difference between two configs as their short forms show it, e.g. step 1 -> 2 adds
// "swizzled".
struct ConfigChange {
  std::string previous_shape;  // the "(FP16, 128, 64, 64, 4)" parts, set only when they differ
  std::string current_shape;
  std::vector<std::string> added_features;    // in the current config only
  std::vector<std::string> removed_features;  // in the previous config only
  bool identical() const;
};

ConfigChange describe_config_change(const KernelConfig& previous, const KernelConfig& current);

}  // namespace flashscope::explorer
