// Joining the CSVs of a sweep's shards (`explorer --csv --shard K/N` on N hosts) into one file, and
// checking that they fit together: the same columns, no measurement twice, and, against the plan
// of the selection they were run with, every cell present. No GPU needed.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "profiling/results/results.hpp"
#include "profiling/sweep/sweep_plan.hpp"

namespace flashscope {

// One results CSV as read for merging: its header as well as its rows.
struct ResultsFileContents {
  std::string path;
  std::vector<std::string> columns;  // header, in file order
  std::vector<std::string> extra_metric_names;
  std::vector<ResultRow> rows;
};

// Throws ResultsFormatError naming the file and line.
ResultsFileContents read_results_file_contents(const std::string& path);

// What makes two rows the same measurement for merging: the plan cell and the device model,
// i.e. (step, config, dtype, shape, device), and for a reference its pass (measured before or
// after the shape's kernels).
std::string merge_key(const ResultRow& row);

struct MergeOutcome {
  std::vector<ResultRow> rows;                  // every input's rows, in input order
  std::vector<std::string> extra_metric_names;  // the shared metric columns
  // Problems that forbid writing a merged file: columns that differ, a measurement twice.
  std::vector<std::string> errors;
  // Worth knowing, not wrong: several commits, input seeds or cache modes among the inputs.
  std::vector<std::string> warnings;
  bool coverage_checked = false;
  std::size_t plan_cells = 0;
  std::vector<std::string> missing_cells;  // labels of plan cells no input has a row for
  std::size_t rows_outside_plan = 0;       // rows of cells the plan does not have
  std::size_t fault_rows = 0;
  std::size_t skipped_rows = 0;
};

// Merges `inputs` (at least one); checks coverage of `plan`'s cells when it is given. Errors are
// listed at most `max_listed` at a time, then counted.
MergeOutcome merge_result_files(const std::vector<ResultsFileContents>& inputs,
                                const SweepPlan* plan, std::size_t max_listed = 20);

}  // namespace flashscope
