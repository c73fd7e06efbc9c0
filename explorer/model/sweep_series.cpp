#include "explorer/model/sweep_series.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace flashscope::explorer {

std::vector<SweepSeries> build_sweep_series(const RowSet& set, const SweepQuery& query) {
  // One usable row per (step, dtype, N): the fastest (a reference's first pass).
  std::map<std::pair<RowSubject, std::string>, std::map<int, const ResultRow*>> fastest;
  for (const ResultRow* row : set.rows()) {
    if (!is_usable(*row)) continue;
    const ResultRow*& slot = fastest[{row->subject, dtype_text(*row)}][row->problem.seq_len];
    if (slot == nullptr || stands_before(*row, *slot)) slot = row;
  }

  std::vector<SweepSeries> series;
  for (const RowSubject& step : query.steps) {
    for (const std::string& dtype : query.dtypes) {
      const auto found = fastest.find({step, dtype});
      if (found == fastest.end()) continue;
      SweepSeries line{step, dtype, step.label() + " " + dtype, {}};
      for (const auto& [seq_len, row] : found->second) {
        std::optional<double> value = row->tflops;
        if (query.mode == ValueMode::percent_of_baseline)
          value = set.percent_of_baseline(*row, query.baseline, query.basis);
        if (value) line.points.push_back({seq_len, *value, row});
      }
      if (!line.points.empty()) series.push_back(std::move(line));
    }
  }
  return series;
}

std::vector<RowSubject> available_series_steps(const RowSet& set) {
  std::set<RowSubject> steps;
  for (const ResultRow* row : set.rows())
    steps.insert(row->subject);
  return {steps.begin(), steps.end()};
}

}  // namespace flashscope::explorer
