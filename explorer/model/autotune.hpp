// The auto-tune view's model: every measured config of one step as a point, coloured by its
// block shape, with the fastest config at each N marked.
#pragma once

#include <compare>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "explorer/model/row_set.hpp"

namespace flashscope::explorer {

struct BlockShape {
  int B_r = 0;
  int B_c = 0;
  auto operator<=>(const BlockShape&) const = default;
};

std::string block_shape_label(const BlockShape& shape);  // "128x64"

struct AutotuneQuery {
  int step = 0;                // a step number; 0 before a view picked one
  std::string dtype;           // empty: every dtype
  std::optional<int> seq_len;  // nullopt: every N
  // The workload's axes (RowFilter::workload); an axis without an entry accepts any value, each
  // workload still has its own fastest.
  WorkloadSelection workload;
  bool operator==(const AutotuneQuery&) const = default;
};

struct AutotunePoint {
  const ResultRow* row = nullptr;
  std::optional<BlockShape> shape;
  bool fastest_at_seq_len = false;  // the fastest usable row of its (dtype, workload, N)
};

struct AutotuneModel {
  std::vector<AutotunePoint> points;  // every row of the step that passes the query
  std::vector<BlockShape> shapes;     // distinct shapes, ascending: the colour legend
  // One per (dtype, workload, N), ascending dtype, then non-causal before causal, then N: a
  // causal row never competes with one without the mask.
  std::vector<const ResultRow*> fastest;

  // Index into `shapes` for colouring; shapes.size() for "other" (a row without a config).
  std::size_t shape_index(const std::optional<BlockShape>& shape) const;
};

AutotuneModel build_autotune_model(const RowSet& set, const AutotuneQuery& query);

}  // namespace flashscope::explorer
