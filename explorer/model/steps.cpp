#include "explorer/model/steps.hpp"

#include <algorithm>

#include "configs/config_sets.hpp"

namespace flashscope::explorer {

std::string_view step_title(int step) {
  const StepDescriptor* descriptor = configs::find_step_descriptor(step);
  return descriptor != nullptr ? descriptor->title : std::string_view{};
}

bool ConfigChange::identical() const {
  return previous_shape == current_shape && added_features.empty() && removed_features.empty();
}

namespace {

// A config's short form "(FP16, 128, 64, 64, 4): async+swizzled" as its shape part and its sorted
// features.
std::pair<std::string, std::vector<std::string>> split_config(const KernelConfig& config) {
  const std::string text = to_short_form(config);
  const std::string features_text = features_string(config);
  const std::string shape = text.substr(0, text.find("):") + 1);
  std::string_view features = features_text;
  std::vector<std::string> tokens;
  while (!features.empty()) {
    const std::size_t plus = features.find('+');
    std::string_view token = features.substr(0, plus);
    while (!token.empty() && token.front() == ' ')
      token.remove_prefix(1);
    while (!token.empty() && token.back() == ' ')
      token.remove_suffix(1);
    if (!token.empty()) tokens.emplace_back(token);
    if (plus == std::string_view::npos) break;
    features.remove_prefix(plus + 1);
  }
  std::sort(tokens.begin(), tokens.end());
  return {shape, tokens};
}

}  // namespace

ConfigChange describe_config_change(const KernelConfig& previous, const KernelConfig& current) {
  auto [previous_shape, previous_features] = split_config(previous);
  auto [current_shape, current_features] = split_config(current);
  ConfigChange change;
  if (previous_shape != current_shape) {
    change.previous_shape = previous_shape;
    change.current_shape = current_shape;
  }
  std::set_difference(current_features.begin(), current_features.end(), previous_features.begin(),
                      previous_features.end(), std::back_inserter(change.added_features));
  std::set_difference(previous_features.begin(), previous_features.end(), current_features.begin(),
                      current_features.end(), std::back_inserter(change.removed_features));
  return change;
}

}  // namespace flashscope::explorer
