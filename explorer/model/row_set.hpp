// The rows a view works on, plus the lookups every view needs: reference rows by problem shape
// (for "% of FA2 / cuDNN"), and the distinct dtypes, sequence lengths and steps present.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "explorer/model/result_files.hpp"
#include "profiling/results.hpp"

namespace flashscope::explorer {

enum class Reference { fa2, cudnn };
inline constexpr Reference kReferences[] = {Reference::fa2, Reference::cudnn};

std::string_view reference_key(Reference reference);    // the step column's value: "fa2"
std::string_view reference_label(Reference reference);  // for people: "FA2", "cuDNN"
std::optional<Reference> reference_from_key(std::string_view step);

// A row whose numbers may be aggregated: it ran ("ok") and did not fail the correctness check.
// Faulted, skipped and failing rows still appear in tables, never in bests or means.
bool is_usable(const ResultRow& row);

// Order of the step column: 1..16 numerically, then fa2, cudnn, then anything else by name.
int step_order(std::string_view step);
bool step_less(std::string_view a, std::string_view b);
std::string step_label(std::string_view step);  // "step 7", "FA2", "cuDNN"

// Which rows of the shown files the views use; an empty field accepts any value. Mixing
// devices or cache modes in one chart would compare unlike measurements.
struct RowFilter {
  std::string device;  // the model name (the device column)
  std::string cache_mode;
  std::string gpu;  // one GPU of that model: index or UUID (explorer/model/devices.hpp)
};

std::vector<const ResultRow*> select_rows(const std::vector<ResultFile>& files,
                                          const RowFilter& filter);
std::vector<const ResultRow*> all_rows(const ResultFile& file);

std::vector<std::string> distinct_devices(const std::vector<ResultFile>& files);
std::vector<std::string> distinct_cache_modes(const std::vector<ResultFile>& files);

class RowSet {
 public:
  RowSet() = default;
  explicit RowSet(std::vector<const ResultRow*> rows);

  const std::vector<const ResultRow*>& rows() const { return rows_; }
  bool empty() const { return rows_.empty(); }

  // The fastest usable reference row with the same dtype and problem shape, if any.
  const ResultRow* reference_for(const ResultRow& row, Reference reference) const;

  // Reference median / row median · 100. Uses the row's own pct column when the sweep wrote it
  // (it was paired at measurement time), else pairs it with a loaded reference row.
  std::optional<double> percent_of_reference(const ResultRow& row, Reference reference) const;

  // Distinct values, computed once here because views ask for them every frame.
  const std::vector<std::string>& dtypes() const { return dtypes_; }  // sorted
  const std::vector<int>& seq_lens(std::string_view dtype) const;     // ascending; "" = any dtype
  const std::vector<int>& steps() const { return steps_; }            // numbered steps, ascending

 private:
  using ShapeKey = std::tuple<std::string, int, int, int, int>;  // dtype, d_head, B, H, N
  static ShapeKey shape_of(const ResultRow& row);

  std::vector<const ResultRow*> rows_;
  std::map<ShapeKey, const ResultRow*> fastest_reference_[2];  // indexed by Reference
  std::vector<std::string> dtypes_;
  std::map<std::string, std::vector<int>, std::less<>> seq_lens_;  // by dtype; "" = any
  std::vector<int> steps_;
};

// Harmonic mean; nullopt when empty or any value is not positive.
std::optional<double> harmonic_mean(const std::vector<double>& values);

}  // namespace flashscope::explorer
