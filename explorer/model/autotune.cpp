#include "explorer/model/autotune.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include "kernels/common/config.hpp"

namespace flashscope::explorer {

std::string block_shape_label(const BlockShape& shape) {
  return std::to_string(shape.B_r) + "x" + std::to_string(shape.B_c);
}

std::size_t AutotuneModel::shape_index(const std::optional<BlockShape>& shape) const {
  if (!shape) return shapes.size();
  return static_cast<std::size_t>(std::lower_bound(shapes.begin(), shapes.end(), *shape) -
                                  shapes.begin());
}

AutotuneModel build_autotune_model(const RowSet& set, const AutotuneQuery& query) {
  AutotuneModel model;
  std::set<BlockShape> shapes;
  // (dtype name, workload, N) -> point: `fastest` lists bf16 before fp16, as the name sorts, then
  // the workloads in problem order (the non-causal before the causal one), then N.
  std::map<std::tuple<std::string, Problem, int>, std::size_t> fastest_point;
  for (const ResultRow* row : set.rows()) {
    if (row->step_number() != query.step || !dtype_matches(*row, query.dtype)) continue;
    if (query.seq_len && row->problem.seq_len != *query.seq_len) continue;
    if (!workload_matches(*row, query.workload)) continue;
    std::optional<BlockShape> shape;
    if (row->config) shape = BlockShape{row->config->B_r, row->config->B_c};
    AutotunePoint point{row, shape, false};
    if (point.shape) shapes.insert(*point.shape);
    if (is_usable(*row)) {
      const auto key =
          std::make_tuple(dtype_text(*row), workload_of(row->problem), row->problem.seq_len);
      const auto found = fastest_point.find(key);
      if (found == fastest_point.end() || row->tflops > model.points[found->second].row->tflops)
        fastest_point[key] = model.points.size();
    }
    model.points.push_back(point);
  }
  model.shapes.assign(shapes.begin(), shapes.end());
  for (const auto& [key, index] : fastest_point) {
    model.points[index].fastest_at_seq_len = true;
    model.fastest.push_back(model.points[index].row);
  }
  return model;
}

}  // namespace flashscope::explorer
