// Series for the sweep view: TFLOP/s (or % of a reference) against N for chosen steps and
// references. Each point is the series' fastest usable config at that N, as in the progression.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "explorer/model/row_set.hpp"

namespace flashscope::explorer {

enum class ValueMode { tflops, percent_of_baseline };

struct SeriesPoint {
  int seq_len = 0;
  double value = 0;
  const ResultRow* row = nullptr;
};

struct SweepSeries {
  RowSubject subject;
  std::string dtype;
  std::string label;                // "step 7 fp16"
  std::vector<SeriesPoint> points;  // ascending N
};

struct SweepQuery {
  std::vector<RowSubject> steps;  // kernels and baselines
  std::vector<std::string> dtypes;
  ValueMode mode = ValueMode::tflops;
  Baseline baseline = Baseline::fa2;        // for percent_of_baseline
  PercentBasis basis = PercentBasis::time;  // for percent_of_baseline
  bool operator==(const SweepQuery&) const = default;
};

// One series per (step, dtype) that has at least one point, in the query's order.
std::vector<SweepSeries> build_sweep_series(const RowSet& set, const SweepQuery& query);

// Every step and baseline present (numbered steps ascending, then baselines).
std::vector<RowSubject> available_series_steps(const RowSet& set);

}  // namespace flashscope::explorer
