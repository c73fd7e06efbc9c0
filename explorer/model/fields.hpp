// The columns a view can show, sort, filter or plot, resolved against a RowSet (percentages may
// need a reference row). Tables, tooltips and chart axes all go through these functions so a
// value reads the same everywhere.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "explorer/model/row_set.hpp"

namespace flashscope::explorer {

enum class Field {
  step,
  config,
  dtype,
  seq_len,
  batch,
  tflops,
  pct_fa2,
  pct_cudnn,
  pct_fa2_cycles,    // % of FA2 by cycles (PercentBasis::cycles)
  pct_cudnn_cycles,  // % of cuDNN by cycles
  median_ms,
  sm_clock_mhz,
  registers,
  smem_bytes,
  local_bytes,
  l2_hit_pct,
  cycles,
  tensor_pipe_pct,  // tensor-pipe activity, when the sweep collected kTensorPipeMetric
  max_error,
  max_error_fp64,  // FP8 rows and their cuDNN FP8 baseline: max |O - R_ref| against fp64
  rms_error_fp64,  // the same rows' RMS error against fp64
  verdict,
  status,
};

// The CUPTI metric behind Field::tensor_pipe_pct: collected when a sweep asks for it with
// `--metrics sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active` (an extra metric).
inline constexpr std::string_view kTensorPipeMetric =
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";

std::string_view field_label(Field field);  // column header / axis title, with unit
bool is_numeric_field(Field field);

// The % field of a reference read by time or by cycles.
Field percent_field(Baseline baseline, PercentBasis basis);

// Nullopt for text fields and for values the row does not have (e.g. no profiler metrics).
std::optional<double> numeric_field(const RowSet& set, const ResultRow& row, Field field);

// Display text; "-" when the row has no value.
std::string format_field(const RowSet& set, const ResultRow& row, Field field);

// Number formatting shared by tables and tooltips: fixed decimals, "-" for nullopt.
std::string format_number(std::optional<double> value, int decimals);

struct SortKey {
  Field field;
  bool descending = false;
  bool operator==(const SortKey&) const = default;
};

// Stable multi-key sort. Rows missing a numeric value sort last in either direction, so a
// descending TFLOP/s sort never starts with faulted rows.
void sort_rows(std::vector<const ResultRow*>& rows, std::span<const SortKey> keys,
               const RowSet& set);

// Table filter: whitespace-separated terms, all of which must match (case-insensitive). A term
// matches when it occurs in the row's config, dtype, verdict or status text, or equals
// "step=<step>" / "n=<seq_len>" / "gpu=<device index>", or is "gpu=<UUID or its prefix>";
// "-term" excludes; "double quotes" group words into one term.
class RowTextFilter {
 public:
  explicit RowTextFilter(std::string_view query);
  bool empty() const { return include_.empty() && exclude_.empty(); }
  bool matches(const ResultRow& row) const;

 private:
  std::vector<std::string> include_;
  std::vector<std::string> exclude_;
};

// What held the row's SM clock down while it was measured: the sweep records only NVML's
// throttling reasons (power cap, HW slowdown, SW and HW thermal, HW power brake) in
// clock_reasons, joined by " + ". Empty when nothing did, or the row predates the column.
std::vector<std::string> clock_held_by(const ResultRow& row);

// The GPU while the row was measured, one line for tooltips: "1545 MHz median (1530..1560),
// 691 W mean of a 700 W limit, 58 C max, held by power cap"; the parts the row lacks are left out,
// and a row with no clock at all reads "clock not recorded".
std::string clock_summary(const ResultRow& row);

std::vector<const ResultRow*> filter_rows(const std::vector<const ResultRow*>& rows,
                                          const RowTextFilter& filter);

}  // namespace flashscope::explorer
