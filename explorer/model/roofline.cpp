#include "explorer/model/roofline.hpp"

#include <algorithm>

#include "kernels/common/config.hpp"
#include "kernels/common/problem.hpp"

namespace flashscope::explorer {

std::optional<double> arithmetic_intensity(const ResultRow& row) {
  const auto read = row.extra_metrics.find(kDramReadMetric);
  const auto write = row.extra_metrics.find(kDramWriteMetric);
  if (read == row.extra_metrics.end() || write == row.extra_metrics.end()) return std::nullopt;
  const double bytes = read->second + write->second;
  if (!(bytes > 0)) return std::nullopt;
  // The row's own workload: a causal row did half the FLOP.
  return matmul_flops(row.problem) / bytes;
}

Roofline build_roofline(const Progression& progression, const Ceilings& ceilings,
                        const std::string& dtype) {
  Roofline roofline;
  for (const auto* group : {&progression.steps, &progression.baselines}) {
    for (const StepValue& value : *group) {
      for (const ResultRow* row : value.rows) {
        if (roofline.device.empty()) roofline.device = row->device;
        const auto intensity = arithmetic_intensity(*row);
        if (!intensity) {
          ++roofline.rows_without_dram;
          continue;
        }
        roofline.points.push_back({value.subject, row, *intensity, row->tflops});
      }
    }
  }
  for (const ComputeCeiling& ceiling : ceilings.compute())
    if (ceiling.dtype == dtype && (roofline.device.empty() || ceiling.device == roofline.device))
      roofline.compute_roofs.push_back(&ceiling);
  std::sort(roofline.compute_roofs.begin(), roofline.compute_roofs.end(),
            [](const ComputeCeiling* a, const ComputeCeiling* b) { return a->tflops > b->tflops; });
  if (!roofline.compute_roofs.empty() || !roofline.device.empty())
    roofline.memory_roof = ceilings.best_memory(
        roofline.device.empty() ? roofline.compute_roofs.front()->device : roofline.device);
  return roofline;
}

RowSet rows_with_dram(const RowSet& rows) {
  std::vector<const ResultRow*> kept(rows.ceiling_rows());
  for (const ResultRow* row : rows.rows())
    if (arithmetic_intensity(*row)) kept.push_back(row);
  return RowSet(std::move(kept));
}

std::vector<RowSubject> steps_not_placed(const Progression& all, const Roofline& placed) {
  std::vector<RowSubject> missing;
  for (const auto* group : {&all.steps, &all.baselines})
    for (const StepValue& value : *group) {
      const bool found =
          std::any_of(placed.points.begin(), placed.points.end(),
                      [&](const RooflinePoint& point) { return point.subject == value.subject; });
      if (!found) missing.push_back(value.subject);
    }
  return missing;
}

double attainable_tflops(double compute_tflops, double gbytes_per_s, double intensity) {
  return std::min(compute_tflops, gbytes_per_s * intensity / 1000.0);
}

}  // namespace flashscope::explorer
