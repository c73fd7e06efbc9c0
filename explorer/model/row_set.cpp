#include "explorer/model/row_set.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "explorer/model/devices.hpp"

namespace flashscope::explorer {

std::string_view percent_basis_label(PercentBasis basis) {
  return basis == PercentBasis::cycles ? "by cycles" : "by time";
}

bool is_usable(const ResultRow& row) {
  return row.status.ok() && row.verdict != Verdict::fail && row.median_ms > 0 && row.tflops > 0;
}

bool stands_before(const ResultRow& a, const ResultRow& b) {
  const int pass_a = a.reference_pass.value_or(1), pass_b = b.reference_pass.value_or(1);
  if (pass_a != pass_b) return pass_a < pass_b;
  return a.tflops > b.tflops;
}

bool dtype_matches(const ResultRow& row, std::string_view dtype) {
  return dtype.empty() || dtype_text(row) == dtype;
}

namespace {

bool accepts(const std::string& wanted, const std::string& value) {
  return wanted.empty() || wanted == value;
}

template <typename Projection>
std::vector<std::string> distinct_values(const std::vector<ResultFile>& files, Projection project) {
  std::set<std::string> values;
  for (const ResultFile& file : files)
    for (const ResultRow& row : file.rows)
      values.insert(project(row));
  return {values.begin(), values.end()};
}

}  // namespace

std::vector<const ResultRow*> select_rows(const std::vector<ResultFile>& files,
                                          const RowFilter& filter) {
  std::vector<const ResultRow*> rows;
  for (const ResultFile& file : files) {
    if (!file.shown) continue;
    for (const ResultRow& row : file.rows)
      if (accepts(filter.device, row.device) &&
          (row.is_ceiling() ||
           (accepts(filter.cache_mode, row.cache_mode) && gpu_matches(row, filter.gpu) &&
            (filter.run.empty() || filter.run == run_key(row)) &&
            workload_matches(row, filter.workload))))
        rows.push_back(&row);
  }
  return rows;
}

std::vector<const ResultRow*> all_rows(const ResultFile& file) {
  std::vector<const ResultRow*> rows;
  rows.reserve(file.rows.size());
  for (const ResultRow& row : file.rows)
    rows.push_back(&row);
  return rows;
}

std::vector<std::string> distinct_devices(const std::vector<ResultFile>& files) {
  return distinct_values(files, [](const ResultRow& row) { return row.device; });
}

std::vector<std::string> distinct_cache_modes(const std::vector<ResultFile>& files) {
  return distinct_values(files, [](const ResultRow& row) { return row.cache_mode; });
}

const std::vector<Axis>& selectable_workload_axes() {
  static const std::vector<Axis> axes = [] {
    std::vector<Axis> out;
    for (const AxisSpec& spec : problem_axes())
      if (spec.workload && spec.axis != Axis::dtype) out.push_back(spec.axis);
    return out;
  }();
  return axes;
}

bool workload_matches(const ResultRow& row, const WorkloadSelection& selection) {
  if (row.is_ceiling()) return true;
  for (const auto& [axis, value] : selection)
    if (axis_spec(axis).get(row.problem) != value) return false;
  return true;
}

std::vector<Problem> distinct_workloads(const std::vector<ResultFile>& files) {
  std::set<Problem> workloads;
  for (const ResultFile& file : files)
    if (file.shown)
      for (const ResultRow& row : file.rows)
        if (!row.is_ceiling()) {
          Problem workload = workload_of(row.problem);
          workload.dtype = DType::FP16;
          workloads.insert(workload);
        }
  return {workloads.begin(), workloads.end()};
}

namespace {

// Whether `workload` has the selected value of every selectable axis before `axis`.
bool agrees_before(const Problem& workload, const WorkloadSelection& selection, Axis axis) {
  for (const Axis earlier : selectable_workload_axes()) {
    if (earlier == axis) return true;
    const auto found = selection.find(earlier);
    if (found != selection.end() && axis_spec(earlier).get(workload) != found->second) return false;
  }
  return true;
}

}  // namespace

std::vector<int> workload_axis_values(const std::vector<Problem>& workloads,
                                      const WorkloadSelection& selection, Axis axis) {
  std::set<int> values;
  for (const Problem& workload : workloads)
    if (agrees_before(workload, selection, axis)) values.insert(axis_spec(axis).get(workload));
  return {values.begin(), values.end()};
}

WorkloadSelection repaired_workload(const std::vector<Problem>& workloads,
                                    WorkloadSelection selection) {
  if (workloads.empty()) return {};
  for (const Axis axis : selectable_workload_axes()) {
    const AxisSpec& spec = axis_spec(axis);
    std::vector<const Problem*> candidates;
    for (const Problem& workload : workloads)
      if (agrees_before(workload, selection, axis)) candidates.push_back(&workload);
    const auto found = selection.find(axis);
    const bool kept = found != selection.end() &&
                      std::any_of(candidates.begin(), candidates.end(),
                                  [&](const Problem* w) { return spec.get(*w) == found->second; });
    if (kept) continue;
    // The plain value (whose fragment is empty: d_head 128, 16 heads, no grouping, no mask,
    // forward) where a candidate has it, else the smallest.
    const Problem* chosen = nullptr;
    for (const Problem* candidate : candidates)
      if (spec.fragment(*candidate).empty()) {
        chosen = candidate;
        break;
      }
    if (chosen == nullptr)
      for (const Problem* candidate : candidates)
        if (chosen == nullptr || spec.get(*candidate) < spec.get(*chosen)) chosen = candidate;
    selection[axis] = spec.get(*chosen);
  }
  return selection;
}

std::string workload_value_label(Axis axis, int value, const WorkloadSelection& selection) {
  // The value in the context of the others selected (heads_kv is read against heads).
  Problem context = multi_head_problem(DType::FP16, 1, 1, 16, 128);
  for (const auto& [other, other_value] : selection)
    axis_spec(other).set(context, other_value);
  axis_spec(axis).set(context, value);
  return axis_spec(axis).value_label(context);
}

std::vector<RunChoice> distinct_runs(const std::vector<ResultFile>& files) {
  std::map<std::string, RunChoice> runs;
  for (const ResultFile& file : files)
    for (const ResultRow& row : file.rows) {
      RunChoice& run = runs[run_key(row)];
      if (run.rows++ == 0) {
        run.key = run_key(row);
        run.label = run_label(row);
      }
    }
  std::vector<RunChoice> choices;
  for (auto& [key, run] : runs)
    choices.push_back(std::move(run));
  std::sort(choices.begin(), choices.end(),
            [](const RunChoice& a, const RunChoice& b) { return a.label < b.label; });
  return choices;
}

RowSet::ShapeKey RowSet::shape_of(const ResultRow& row) {
  return {run_key(row), row.problem};
}

RowSet::RowSet(std::vector<const ResultRow*> rows) {
  for (const ResultRow* row : rows)
    (row->is_ceiling() ? ceiling_rows_ : rows_).push_back(row);
  std::set<std::string> dtypes;
  std::map<std::string, std::set<int>> seq_lens;
  std::set<int> steps;
  std::set<std::string> runs;
  for (const ResultRow* row : rows_) {
    dtypes.insert(dtype_text(*row));
    seq_lens[dtype_text(*row)].insert(row->problem.seq_len);
    seq_lens[""].insert(row->problem.seq_len);
    runs.insert(run_label(*row));
    if (const auto step = row->step_number()) steps.insert(*step);
    const auto baseline = row->subject.which_baseline();
    if (!baseline || !is_usable(*row)) continue;
    // The first pass, as the sweep pairs it; among equal passes (repeated sweeps of one run)
    // the fastest, as repeated measurements are alternatives.
    const ResultRow*& paired = paired_baseline_[static_cast<int>(*baseline)][shape_of(*row)];
    const auto rank = [](const ResultRow* r) {
      return std::make_pair(r->reference_pass.value_or(1), r->median_ms);
    };
    if (paired == nullptr || rank(row) < rank(paired)) paired = row;
  }
  run_labels_.assign(runs.begin(), runs.end());
  dtypes_.assign(dtypes.begin(), dtypes.end());
  for (const auto& [dtype, values] : seq_lens)
    seq_lens_[dtype].assign(values.begin(), values.end());
  steps_.assign(steps.begin(), steps.end());
}

const ResultRow* RowSet::baseline_for(const ResultRow& row, Baseline baseline) const {
  const auto& by_shape = paired_baseline_[static_cast<int>(baseline)];
  const auto found = by_shape.find(shape_of(row));
  return found == by_shape.end() ? nullptr : found->second;
}

std::optional<double> RowSet::percent_of_baseline(const ResultRow& row, Baseline baseline,
                                                  PercentBasis basis) const {
  const bool fa2 = baseline == Baseline::fa2;
  const std::optional<double>& stored = basis == PercentBasis::time
                                            ? (fa2 ? row.pct_fa2 : row.pct_cudnn)
                                            : (fa2 ? row.pct_fa2_cycles : row.pct_cudnn_cycles);
  if (stored) return stored;
  const ResultRow* baseline_row = baseline_for(row, baseline);
  if (baseline_row == nullptr) return std::nullopt;
  if (basis == PercentBasis::time) {
    if (!(row.median_ms > 0)) return std::nullopt;
    return baseline_row->median_ms / row.median_ms * 100.0;
  }
  if (!baseline_row->cycles || !row.cycles || !(*row.cycles > 0)) return std::nullopt;
  return *baseline_row->cycles / *row.cycles * 100.0;
}

const std::vector<int>& RowSet::seq_lens(std::string_view dtype) const {
  static const std::vector<int> kNone;
  const auto found = seq_lens_.find(dtype);
  return found == seq_lens_.end() ? kNone : found->second;
}

std::optional<double> harmonic_mean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double reciprocal_sum = 0;
  for (double value : values) {
    if (!(value > 0)) return std::nullopt;
    reciprocal_sum += 1.0 / value;
  }
  return static_cast<double>(values.size()) / reciprocal_sum;
}

}  // namespace flashscope::explorer
