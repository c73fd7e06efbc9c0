// Two result files side by side: rows are paired by what was measured (step, config, dtype,
// problem shape, and a reference's pass) and compared by TFLOP/s, which is what a re-run or
// another GPU changes.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "explorer/model/result_files.hpp"
#include "explorer/model/row_set.hpp"
#include "profiling/results/results.hpp"

namespace flashscope::explorer {

// Whether B's time differs from A's: only when the two rows' 95 % intervals of the median
// (ci_low_ms..ci_high_ms) are disjoint (docs/profiling.md, "Significance"). Rows from before the
// interleaved engine have no interval, and nothing is said of them.
enum class Significance { no_interval, within_noise, b_faster, b_slower };
std::string_view significance_name(Significance significance);

struct ComparedRow {
  const ResultRow* a = nullptr;  // nullptr: measured only in B
  const ResultRow* b = nullptr;  // nullptr: measured only in A
  std::optional<double> ratio;   // B TFLOP/s / A TFLOP/s, when both are usable
  Significance significance = Significance::no_interval;  // when both are usable
};

// The significance of a pair of usable rows of one measurement.
Significance significance_of(const ResultRow& a, const ResultRow& b);

struct SignificanceCounts {
  int b_faster = 0;
  int b_slower = 0;
  int within_noise = 0;
  int no_interval = 0;
};

struct StepRatio {
  RowSubject subject;
  double geometric_mean = 0;  // of the step's ratios
  int pairs = 0;
};

struct Comparison {
  std::vector<ComparedRow> rows;  // paired rows first (in A's order), then B-only rows
  int paired = 0;
  int only_a = 0;
  int only_b = 0;
  std::optional<double> geometric_mean_ratio;  // over every row with a ratio
  SignificanceCounts significance;             // over every row with a ratio
  std::vector<StepRatio> per_step;             // step order
  // Measurements a side holds more than once: every copy, in file order (first appearance).
  std::vector<std::vector<const ResultRow*>> duplicates_a, duplicates_b;
};

// Where a file holds the same measurement more than once, its fastest usable copy is paired, and
// the copies are listed in duplicates_a / duplicates_b (explorer compare refuses such a file; the
// view warns).
Comparison compare_results(const std::vector<const ResultRow*>& a,
                           const std::vector<const ResultRow*>& b);

// The reference libraries each side's reference rows were measured with ("cuDNN 9.19.0",
// "PyTorch 2.11.0", ...; reference_version), sorted, each once. Files from before that column
// have none.
std::vector<std::string> reference_versions(const std::vector<const ResultRow*>& rows);
// A sentence when the two sides name different reference libraries ("% of cuDNN" of one side is
// then a percentage of another cuDNN: two releases differ by up to 15 % on one problem); nullopt
// when they agree or either side names none.
std::optional<std::string> reference_version_mismatch(const std::vector<const ResultRow*>& a,
                                                      const std::vector<const ResultRow*>& b);

// How far two runs of the same plan disagree row by row: |B / A − 1| over the rows with a ratio.
struct RatioSpread {
  int pairs = 0;
  double median_percent = 0;  // median |B / A − 1| · 100 (mean of the middle two for an even count)
  double p95_percent = 0;     // 95th percentile (nearest rank)
  double max_percent = 0;
  const ComparedRow* worst = nullptr;  // the row of max_percent, in `rows`
};
// Nullopt when no row has a ratio. Only rows whose B side passes `b_filter` count (all when it is
// empty), e.g. one GPU of B.
std::optional<RatioSpread> ratio_spread(
    const std::vector<ComparedRow>& rows,
    const std::function<bool(const ResultRow& b)>& b_filter = {});

// The two files Compare opens on: two runs of the same kind, so that rows pair. Among the files
// with rows on `device` (empty: any one device), the pairs that share a usable measurement (step,
// config, dtype, shape, reference pass); of those the re-runs, pairs where at least half the
// usable kernel measurements (FA2's and cuDNN's reference rows not counted) of the smaller file
// are in the other (a sweep and a repeat of it, or of part of it), and of the re-runs the two
// newest runs (by the UTC start in run_id; a file without one counts as older than any that has
// it), then the pair sharing the most measurements. Without a re-run, the pair with the largest
// such fraction, then the most shared (two unrelated sweeps share a few reference rows: they are no
// re-run). A is the older file, B the newer. Nullopt when no two files share a measurement: the
// view then says what to pick.
struct ComparePair {
  std::size_t a = 0;
  std::size_t b = 0;
  std::size_t shared = 0;  // measurements usable in both
  double overlap = 0;      // shared / the smaller file's usable measurements
  std::string device;
};
std::optional<ComparePair> default_compare_pair(const std::vector<ResultFile>& files,
                                                const std::string& device);

// The UTC start of a row's sweep ("2026-11-23T14:56:21Z" from run_id "<host> <UTC start>"), or
// empty when its run_id does not end in one (named runs, files from before run_id).
std::string run_start(const ResultRow& row);

// The run (run_key) a view shows until the user picks one: among the runs with usable kernel rows
// that `filter` accepts when it accepts every run (device, GPU, cache mode, workload), those whose
// rows cover the most steps, and of those the newest (the latest UTC start among its rows; a run
// without one counts as older), then the one with more rows. Empty when no row qualifies. Rows of
// two runs differ by a percent or more in time alone, so a progression should show one.
std::string default_run(const std::vector<ResultFile>& files, RowFilter filter);

enum class CompareColumn { step, config, dtype, seq_len, a_tflops, b_tflops, ratio };

struct CompareSortKey {
  CompareColumn column;
  bool descending = false;
  bool operator==(const CompareSortKey&) const = default;
};

// Stable; missing values (unpaired side, no ratio) sort last in either direction.
void sort_compared_rows(std::vector<ComparedRow>& rows, std::span<const CompareSortKey> keys);

}  // namespace flashscope::explorer
