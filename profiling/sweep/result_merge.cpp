#include "profiling/sweep/result_merge.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "kernels/common/problem_axes.hpp"
#include "kernels/common/text.hpp"

namespace flashscope {

namespace {

// A measurement's place in the plan: its cell and, for a reference, its pass (1 before the
// shape's kernels, 2 after them; a file from before passes existed has pass 1 only).
std::string measurement_key_of(const ResultRow& row) {
  const int pass = row.is_baseline_or_ceiling() ? row.reference_pass.value_or(1) : 0;
  return plan_cell_key(row.subject, row.config, row.problem) + "#" + std::to_string(pass);
}

std::string measurement_key_of(const MeasurementItem& item) {
  return plan_cell_key(item) + "#" + std::to_string(item.reference_pass);
}

std::string describe(const ResultRow& row) {
  std::string text = row.subject.text();
  if (row.config) text += " " + to_short_form(*row.config);
  text += " " + problem_label(row.problem) + " B=" + std::to_string(row.problem.batch);
  if (row.is_baseline_or_ceiling() && row.reference_pass.value_or(1) > 1)
    text += " (reference pass " + std::to_string(*row.reference_pass) + ")";
  return text + " on " + (row.device.empty() ? "an unnamed device" : row.device);
}

std::string join(const std::vector<std::string>& items) {
  return text::join(items, ", ");
}

// "a.csv row 12": data rows counted from 1 (line = row + 1 unless a field spans lines).
std::string where(const ResultsFileContents& file, std::size_t row_index) {
  return file.path + " row " + std::to_string(row_index + 1);
}

template <typename Projection>
void warn_if_mixed(const std::vector<ResultsFileContents>& inputs, const std::string& what,
                   Projection project, std::vector<std::string>& warnings) {
  std::map<std::string, std::set<std::string>> files_by_value;
  for (const ResultsFileContents& file : inputs)
    for (const ResultRow& row : file.rows)
      files_by_value[project(row)].insert(file.path);
  if (files_by_value.size() < 2) return;
  std::string text = "the inputs carry " + std::to_string(files_by_value.size()) + " " + what + ":";
  for (const auto& [value, files] : files_by_value)
    text += " " + (value.empty() ? std::string("(empty)") : value) + " (" +
            join({files.begin(), files.end()}) + ");";
  text.pop_back();
  warnings.push_back(text);
}

}  // namespace

ResultsFileContents read_results_file_contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ResultsFormatError(path + ": cannot open the file for reading");
  ResultsFileContents contents;
  contents.path = path;
  ResultsCsvParser parser(path);
  contents.rows = read_results_csv(in, parser);
  contents.columns = parser.columns();
  contents.extra_metric_names = parser.extra_metric_names();
  return contents;
}

std::string merge_key(const ResultRow& row) {
  return measurement_key_of(row) + "|" + row.device;
}

MergeOutcome merge_result_files(const std::vector<ResultsFileContents>& inputs,
                                const SweepPlan* plan, std::size_t max_listed) {
  MergeOutcome outcome;
  if (inputs.empty()) {
    outcome.errors.push_back("nothing to merge: no input files");
    return outcome;
  }
  // Same schema: the same set of columns (the reader matches them by name, so order is free).
  const ResultsFileContents& first = inputs.front();
  const std::set<std::string> first_columns(first.columns.begin(), first.columns.end());
  for (const ResultsFileContents& file : inputs) {
    const std::set<std::string> columns(file.columns.begin(), file.columns.end());
    if (columns == first_columns) continue;
    std::vector<std::string> lacks, extra;
    std::set_difference(first_columns.begin(), first_columns.end(), columns.begin(), columns.end(),
                        std::back_inserter(lacks));
    std::set_difference(columns.begin(), columns.end(), first_columns.begin(), first_columns.end(),
                        std::back_inserter(extra));
    std::string text = file.path + ": its columns differ from " + first.path + "'s";
    if (!lacks.empty()) text += "; it lacks " + join(lacks);
    if (!extra.empty()) text += "; it has " + join(extra) + " that " + first.path + " lacks";
    text += " (shards of one sweep are written by the same binary with the same --metrics)";
    outcome.errors.push_back(text);
  }
  outcome.extra_metric_names = first.extra_metric_names;

  // No measurement twice.
  std::map<std::string, std::pair<std::size_t, std::size_t>> seen;  // key -> (file, row)
  std::size_t duplicates = 0;
  for (std::size_t f = 0; f < inputs.size(); ++f) {
    for (std::size_t r = 0; r < inputs[f].rows.size(); ++r) {
      const ResultRow& row = inputs[f].rows[r];
      const auto [found, inserted] = seen.try_emplace(merge_key(row), f, r);
      if (!inserted) {
        if (++duplicates <= max_listed)
          outcome.errors.push_back("measured twice: " + describe(row) + " is in " +
                                   where(inputs[found->second.first], found->second.second) +
                                   " and in " + where(inputs[f], r));
      }
      outcome.rows.push_back(row);
      if (row.status.is_fault()) ++outcome.fault_rows;
      if (row.status.is_skipped()) ++outcome.skipped_rows;
    }
  }
  if (duplicates > max_listed)
    outcome.errors.push_back("... and " + std::to_string(duplicates - max_listed) +
                             " more measurements twice (" + std::to_string(duplicates) +
                             " in all)");

  warn_if_mixed(
      inputs, "commits (git_commit)", [](const ResultRow& row) { return row.git_commit; },
      outcome.warnings);
  warn_if_mixed(
      inputs, "cache modes", [](const ResultRow& row) { return row.cache_mode; }, outcome.warnings);
  // The explorer pairs and ranks rows within one run (run_id), so a sharded sweep reads as one
  // only when its shards shared a --run-id.
  warn_if_mixed(
      inputs, "runs (run_id; give every shard the same --run-id to read them as one)",
      [](const ResultRow& row) { return row.run_id; }, outcome.warnings);
  // One sweep seed gives every shard the same inputs for a problem (with and without the mask:
  // the mask changes the outputs, not the inputs).
  std::map<Problem, std::set<std::uint64_t>> seeds_by_shape;
  for (const ResultRow& row : outcome.rows) {
    Problem inputs = row.problem;
    inputs.causal = false;
    seeds_by_shape[inputs].insert(row.input_seed);
  }
  std::size_t shapes_with_several_seeds = 0;
  for (const auto& [shape, seeds] : seeds_by_shape)
    shapes_with_several_seeds += seeds.size() > 1;
  if (shapes_with_several_seeds > 0)
    outcome.warnings.push_back(
        std::to_string(shapes_with_several_seeds) +
        " shapes were measured on different inputs (several input_seed values): the shards did "
        "not share one --seed");

  if (plan != nullptr) {
    outcome.coverage_checked = true;
    std::set<std::string> covered;
    for (const ResultRow& row : outcome.rows)
      covered.insert(measurement_key_of(row));
    std::set<std::string> planned;
    for (const SweepUnit& unit : plan->units)
      for (const MeasurementItem& item : unit.items) {
        if (!item.recorded) continue;
        const std::string key = measurement_key_of(item);
        if (!planned.insert(key).second) continue;
        if (covered.count(key) == 0) outcome.missing_cells.push_back(item.label());
      }
    outcome.plan_cells = planned.size();
    for (const ResultRow& row : outcome.rows)
      outcome.rows_outside_plan += planned.count(measurement_key_of(row)) == 0;
  }
  return outcome;
}

}  // namespace flashscope
