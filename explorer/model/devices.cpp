#include "explorer/model/devices.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

namespace flashscope::explorer {

namespace {

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

}  // namespace

bool gpu_matches(const ResultRow& row, std::string_view selector) {
  if (selector.empty()) return true;
  if (all_digits(selector))
    return row.device_index && std::to_string(*row.device_index) == selector;
  return !row.device_uuid.empty() && starts_with_ignoring_case(row.device_uuid, selector);
}

std::string DeviceUnit::selector() const {
  if (!uuid.empty()) return uuid;
  if (index) return std::to_string(*index);
  return {};
}

std::string DeviceUnit::label(bool with_name) const {
  std::string text;
  if (index) text = "GPU " + std::to_string(*index);
  if (!uuid.empty()) {
    // The first group of the UUID tells a host's GPUs apart; the tooltip shows the rest.
    const std::size_t end = uuid.find('-', uuid.find('-') + 1);
    text += (text.empty() ? "" : " · ") + uuid.substr(0, end);
  }
  if (text.empty()) return name;
  return with_name ? name + " · " + text : text;
}

std::vector<DeviceUnit> device_units(const std::vector<const ResultRow*>& rows) {
  using Key = std::tuple<std::string, int, std::string>;  // index -1: none
  std::map<Key, DeviceUnit> units;
  for (const ResultRow* row : rows) {
    const Key key{row->device, row->device_index.value_or(-1), row->device_uuid};
    DeviceUnit& unit = units[key];
    if (unit.rows == 0) {
      unit.name = row->device;
      unit.index = row->device_index;
      unit.uuid = row->device_uuid;
    }
    ++unit.rows;
  }
  std::vector<DeviceUnit> sorted;
  for (auto& [key, unit] : units)
    sorted.push_back(std::move(unit));
  return sorted;
}

std::vector<const ResultRow*> rows_on_gpu(const std::vector<const ResultRow*>& rows,
                                          std::string_view selector) {
  std::vector<const ResultRow*> kept;
  for (const ResultRow* row : rows)
    if (gpu_matches(*row, selector)) kept.push_back(row);
  return kept;
}

}  // namespace flashscope::explorer
