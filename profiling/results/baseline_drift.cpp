#include "profiling/results/baseline_drift.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

namespace flashscope {

namespace {

std::string percent(double change, int decimals = 1) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.*f", decimals, 100.0 * change);
  return text;
}

}  // namespace

std::vector<BaselineDrift> baseline_drift(const std::vector<const ResultRow*>& rows) {
  // (run, reference, dtype) -> (device, cache, problem, seed) -> pass -> row: two workloads of a
  // shape (with and without the mask) share their inputs (seed) but are different measurements.
  using ShapeKey = std::tuple<std::string, std::string, Problem, std::uint64_t>;
  // Ordered by the names ("cudnn" before "fa2", "bf16" before "fp16"), as the reports list them.
  std::map<std::tuple<std::string, std::string_view, std::string_view>,
           std::map<ShapeKey, std::map<int, const ResultRow*>>>
      passes;
  for (const ResultRow* row : rows) {
    const auto baseline = row->subject.which_baseline();
    if (!baseline || !row->reference_pass || !row->status.ok() || row->verdict == Verdict::fail ||
        !(row->median_ms > 0))
      continue;
    passes[{run_key(*row), baseline_key(*baseline), dtype_lower_name(row->problem.dtype)}][{
        row->device, row->cache_mode, row->problem, row->input_seed}][*row->reference_pass] = row;
  }
  std::vector<BaselineDrift> drifts;
  for (const auto& [group, shapes] : passes) {
    BaselineDrift drift;
    for (const auto& [shape, by_pass] : shapes) {
      const auto first = by_pass.find(1);
      if (first == by_pass.end() || by_pass.rbegin()->first == 1) continue;
      BaselineDriftPoint point;
      point.first = first->second;
      point.last = by_pass.rbegin()->second;
      point.time_change = point.last->median_ms / point.first->median_ms - 1;
      if (point.first->cycles && point.last->cycles && *point.first->cycles > 0)
        point.cycles_change = *point.last->cycles / *point.first->cycles - 1;
      drift.points.push_back(point);
    }
    if (drift.points.empty()) continue;
    drift.baseline = *drift.points.front().first->subject.which_baseline();
    drift.dtype = drift.points.front().first->problem.dtype;
    std::sort(drift.points.begin(), drift.points.end(), [](const auto& a, const auto& b) {
      return a.first->problem.seq_len < b.first->problem.seq_len;
    });
    drift.run = run_label(*drift.points.front().first);
    std::vector<double> times;
    for (const BaselineDriftPoint& point : drift.points) {
      times.push_back(point.time_change);
      if (point.cycles_change) {
        drift.cycles_min =
            std::min(drift.cycles_min.value_or(*point.cycles_change), *point.cycles_change);
        drift.cycles_max =
            std::max(drift.cycles_max.value_or(*point.cycles_change), *point.cycles_change);
      }
      const auto widen = [](int& low, int& high, int clock) {
        if (clock <= 0) return;
        low = low == 0 ? clock : std::min(low, clock);
        high = std::max(high, clock);
      };
      widen(drift.clock_first_min, drift.clock_first_max, point.first->sm_clock_mhz);
      widen(drift.clock_last_min, drift.clock_last_max, point.last->sm_clock_mhz);
    }
    std::sort(times.begin(), times.end());
    drift.time_min = times.front();
    drift.time_max = times.back();
    const std::size_t n = times.size();
    drift.time_median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
    drifts.push_back(std::move(drift));
  }
  return drifts;
}

std::string describe_drift(const BaselineDrift& drift) {
  std::string text =
      std::string(baseline_key(drift.baseline)) + " " + std::string(dtype_lower_name(drift.dtype)) +
      ": time " + percent(drift.time_min) + " .. " + percent(drift.time_max) + " % (median " +
      percent(drift.time_median) + " %) over " + std::to_string(drift.points.size()) + " N";
  if (drift.cycles_min)
    // Cycle counts move by hundredths of a percent when only the clock moved.
    text +=
        ", cycles " + percent(*drift.cycles_min, 2) + " .. " + percent(*drift.cycles_max, 2) + " %";
  const auto range = [](int low, int high) {
    return low == high ? std::to_string(low) : std::to_string(low) + "-" + std::to_string(high);
  };
  if (drift.clock_first_max > 0 && drift.clock_last_max > 0)
    text += ", SM clock " + range(drift.clock_first_min, drift.clock_first_max) + " -> " +
            range(drift.clock_last_min, drift.clock_last_max) + " MHz";
  return text;
}

}  // namespace flashscope
