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
#include "profiling/results/results.hpp"

namespace flashscope::explorer {

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
  // One head dimension, or 0 for every one. Rows of different d_head are different problems: a
  // view that aggregates (progression, autotune, reports) must show one d_head at a time, so
  // the GUI always sets it (ExplorerState picks 128 when present) and the reports split by it.
  int d_head = 0;
  // One workload, or nullopt for both. A causal row and a row without the mask are different
  // problems (half the FLOP, other outputs): like d_head, the GUI always sets it (ExplorerState
  // picks the non-causal workload when present) and the reports split by it.
  std::optional<bool> causal;
};

std::vector<const ResultRow*> select_rows(const std::vector<ResultFile>& files,
                                          const RowFilter& filter);
std::vector<const ResultRow*> all_rows(const ResultFile& file);

std::vector<std::string> distinct_devices(const std::vector<ResultFile>& files);
std::vector<std::string> distinct_cache_modes(const std::vector<ResultFile>& files);
// The head dimensions of the shown files' measured rows (ceiling rows have none), ascending.
std::vector<int> distinct_d_heads(const std::vector<ResultFile>& files);
// The d_head a view starts with: 128 (every step runs it) when present, else the smallest; 0 when
// `d_heads` is empty.
int default_d_head(const std::vector<int>& d_heads);
// The workloads of the shown files' measured rows: false (no mask) before true (causal).
std::vector<bool> distinct_workloads(const std::vector<ResultFile>& files);
// "non-causal" or "causal", for labels and messages.
std::string_view workload_label(bool causal);

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
  // run, dtype, d_head, B, H, N, causal: a causal row pairs with the causal references only
  using ShapeKey = std::tuple<std::string, std::optional<DType>, int, int, int, int, bool>;
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
