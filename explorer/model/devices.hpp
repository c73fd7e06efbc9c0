// The physical GPUs behind result rows. A sweep over several GPUs (`explorer --csv --devices`)
// writes each row's device index and UUID next to the model name; rows of two H200s of one host
// share the name, so views need the index or UUID to tell them apart. Rows written before those
// columns existed have neither and count as one GPU per model name.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiling/results/results.hpp"

namespace flashscope::explorer {

// Chooses rows by GPU, as users type it: "" any GPU; digits: that device index ("1"); otherwise a
// UUID or its prefix ("GPU-8e5b"), case-insensitive.
bool gpu_matches(const ResultRow& row, std::string_view selector);

struct DeviceUnit {
  std::string name;  // the device column: the model
  std::optional<int> index;
  std::string uuid;  // empty for rows without one
  std::size_t rows = 0;

  // The selector that picks exactly this GPU's rows: its UUID, else its index, else "" (any).
  std::string selector() const;
  // "GPU 1 · GPU-8e5b7a0c" (with the model name first when `with_name`); "NVIDIA H200" alone
  // for rows without index or UUID.
  std::string label(bool with_name = false) const;
};

// Every distinct GPU among `rows` (name, index, UUID), sorted by name, then index, then UUID.
std::vector<DeviceUnit> device_units(const std::vector<const ResultRow*>& rows);

// The rows of `rows` on the GPUs `selector` picks (gpu_matches).
std::vector<const ResultRow*> rows_on_gpu(const std::vector<const ResultRow*>& rows,
                                          std::string_view selector);

}  // namespace flashscope::explorer
