// The rows a view works on, plus the lookups every view needs: baseline rows by problem shape
// (for "% of FA2 / cuDNN"), and the distinct dtypes, sequence lengths and steps present.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "explorer/model/result_files.hpp"
#include "kernels/common/problem_axes.hpp"
#include "profiling/results/results.hpp"

namespace flashscope::explorer {

// A value per workload axis (see RowFilter::workload).
using WorkloadSelection = std::map<Axis, int>;

// How a percentage of a baseline is read. By time: baseline median / row median, which moves
// with the SM clock each row ran at (a power-capped GPU runs different kernels at different
// clocks). By cycles: baseline cycles / row cycles (sm__cycles_elapsed.max of the profiled
// launches), the same comparison at a common clock (docs/profiling.md, "Time and cycles").
enum class PercentBasis { time, cycles };
inline constexpr PercentBasis kPercentBases[] = {PercentBasis::time, PercentBasis::cycles};
std::string_view percent_basis_label(PercentBasis basis);  // "by time", "by cycles"

// A row whose numbers may be aggregated: it ran ("ok") and did not fail the correctness check.
// Faulted, skipped and failing rows still appear in tables, never in bests or means.
bool is_usable(const ResultRow& row);

// Which of two usable rows of the same step, config, dtype and N stands for them: the earlier
// reference pass (kernel rows are paired with it), then the faster. Repeated measurements are
// alternatives; a repeated reference pass measures drift, not the reference.
bool stands_before(const ResultRow& a, const ResultRow& b);

// A row's dtype against a selection's ("fp16", "bf16"; "" accepts any).
bool dtype_matches(const ResultRow& row, std::string_view dtype);

// Which rows of the shown files the views use; an empty field accepts any value. Mixing
// devices, cache modes or runs (run_key: host and commit) in one chart compares unlike
// measurements; views say so when the rows they show come from more than one run. Ceiling rows
// follow the device filter only: a ceiling holds for either cache mode and any run.
struct RowFilter {
  std::string device;  // the model name (the device column)
  std::string cache_mode;
  std::string gpu;  // one GPU of that model: index or UUID (explorer/model/devices.hpp)
  std::string run;  // a run_key(), or empty for every run
  // One value per workload axis (kernels/common/problem_axes.hpp: d_head, heads, heads_kv, the
  // mask, the pass); an axis without an entry accepts any value. Rows of two workloads are
  // different problems: a view that aggregates (progression, autotune, reports) shows one
  // workload at a time, so the GUI always sets every axis the shown files vary (ExplorerState
  // picks the plain value — d_head 128, no mask, forward — when present) and the reports split
  // by them. The dtype is chosen apart (Selection::dtype), since some views show both.
  WorkloadSelection workload;
};

std::vector<const ResultRow*> select_rows(const std::vector<ResultFile>& files,
                                          const RowFilter& filter);
std::vector<const ResultRow*> all_rows(const ResultFile& file);

std::vector<std::string> distinct_devices(const std::vector<ResultFile>& files);
std::vector<std::string> distinct_cache_modes(const std::vector<ResultFile>& files);
// The workload axes a view selects one value of (every workload axis but the dtype), in table
// order.
const std::vector<Axis>& selectable_workload_axes();
// Whether `row` measured a problem with the selected value of every axis `selection` names
// (ceiling rows measure none and match any selection).
bool workload_matches(const ResultRow& row, const WorkloadSelection& selection);
// The workloads (Problem::workload_of, the dtype set to fp16) of the shown files' measured rows.
std::vector<Problem> distinct_workloads(const std::vector<ResultFile>& files);
// The values `axis` takes among `workloads` that agree with `selection` on the axes before it in
// table order, ascending.
std::vector<int> workload_axis_values(const std::vector<Problem>& workloads,
                                      const WorkloadSelection& selection, Axis axis);
// `selection` made consistent with `workloads`: for each selectable axis in table order, its value
// if some workload has it together with the axes before, else the plain value (d_head 128, no
// mask, forward, …) when present, else the smallest. Axes no workload varies are still set, so
// a view never mixes two problems.
WorkloadSelection repaired_workload(const std::vector<Problem>& workloads,
                                    WorkloadSelection selection);
// A value of `axis` as a selector shows it: "128", "causal" / "non-causal", "8 (groups of 4)".
std::string workload_value_label(Axis axis, int value, const WorkloadSelection& selection);

struct RunChoice {
  std::string key;    // run_key()
  std::string label;  // run_label()
  std::size_t rows = 0;
};
std::vector<RunChoice> distinct_runs(const std::vector<ResultFile>& files);  // by label

class RowSet {
 public:
  RowSet() = default;
  // Ceiling rows (`explorer peak`, step "peak:...") are kept apart: they are no step or reference
  // of the progression, and have no shape or sequence length.
  explicit RowSet(std::vector<const ResultRow*> rows);

  const std::vector<const ResultRow*>& rows() const { return rows_; }
  const std::vector<const ResultRow*>& ceiling_rows() const { return ceiling_rows_; }
  bool empty() const { return rows_.empty(); }

  // The usable reference row of the same run (run_key), dtype and problem shape: its first pass
  // (measured before that shape's kernels, as the sweep pairs them), the fastest among equals.
  // Never a reference of another run: another host or build is not a like-for-like baseline.
  const ResultRow* baseline_for(const ResultRow& row, Baseline baseline) const;

  // Baseline / row · 100 by time (medians) or by cycles. Uses the row's own pct column when the
  // sweep wrote it (paired at measurement time), else pairs it with baseline_for().
  std::optional<double> percent_of_baseline(const ResultRow& row, Baseline baseline,
                                            PercentBasis basis = PercentBasis::time) const;

  // The runs (run_label) the rows come from; more than one means the views compare rows
  // measured on different hosts or builds.
  const std::vector<std::string>& run_labels() const { return run_labels_; }

  // Distinct values, computed once here because views ask for them every frame.
  const std::vector<std::string>& dtypes() const { return dtypes_; }  // sorted
  const std::vector<int>& seq_lens(std::string_view dtype) const;     // ascending; "" = any dtype
  const std::vector<int>& steps() const { return steps_; }            // numbered steps, ascending

 private:
  // run and problem: a row pairs with the references of its own problem only (a causal row with
  // the causal references, a grouped one with the grouped references)
  using ShapeKey = std::tuple<std::string, Problem>;
  static ShapeKey shape_of(const ResultRow& row);

  std::vector<const ResultRow*> rows_;
  std::vector<const ResultRow*> ceiling_rows_;
  std::map<ShapeKey, const ResultRow*> paired_baseline_[2];  // indexed by Baseline
  std::vector<std::string> run_labels_;
  std::vector<std::string> dtypes_;
  std::map<std::string, std::vector<int>, std::less<>> seq_lens_;  // by dtype; "" = any
  std::vector<int> steps_;
};

// Harmonic mean; nullopt when empty or any value is not positive.
std::optional<double> harmonic_mean(const std::vector<double>& values);

}  // namespace flashscope::explorer
