#include "explorer/gui/explorer_state.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "explorer/model/compare.hpp"

namespace flashscope::explorer {

std::string_view view_name(ViewId view) {
  switch (view) {
    case ViewId::progression:
      return "progression";
    case ViewId::sweep:
      return "sweep";
    case ViewId::autotune:
      return "autotune";
    case ViewId::detail:
      return "detail";
    case ViewId::compare:
      return "compare";
    case ViewId::roofline:
      return "roofline";
  }
  return "?";
}

std::string_view view_title(ViewId view) {
  switch (view) {
    case ViewId::progression:
      return "Progression";
    case ViewId::sweep:
      return "Sweep";
    case ViewId::autotune:
      return "Autotune";
    case ViewId::detail:
      return "Step detail";
    case ViewId::compare:
      return "Compare";
    case ViewId::roofline:
      return "Roofline";
  }
  return "?";
}

std::optional<ViewId> view_from_name(std::string_view name) {
  for (ViewId view : kViews)
    if (view_name(view) == name) return view;
  return std::nullopt;
}

namespace {

// The value with the most rows: the dataset's main device or cache mode.
template <typename Projection>
std::string most_common(const std::vector<ResultFile>& files, Projection project) {
  std::map<std::string, std::size_t> counts;
  for (const ResultFile& file : files)
    for (const ResultRow& row : file.rows)
      ++counts[project(row)];
  std::string best;
  std::size_t best_count = 0;
  for (const auto& [value, count] : counts) {
    if (count > best_count) {
      best = value;
      best_count = count;
    }
  }
  return best;
}

}  // namespace

void ExplorerState::load(const std::vector<std::string>& paths) {
  // Opening a file twice would double its rows in every view.
  std::vector<std::string> new_paths;
  for (const std::string& path : paths) {
    const bool loaded = std::any_of(files_.begin(), files_.end(), [&](const ResultFile& file) {
      std::error_code error;
      return !file.path.empty() && std::filesystem::equivalent(file.path, path, error);
    });
    if (!loaded) new_paths.push_back(path);
  }
  LoadOutcome outcome = load_result_files(new_paths);
  for (std::string& problem : outcome.problems)
    add_problem(std::move(problem));
  for (ResultFile& file : outcome.files)
    files_.push_back(std::move(file));
  if (!filter_chosen_ && row_count() > 0) {
    RowFilter filter;
    filter.device = most_common(files_, [](const ResultRow& row) { return row.device; });
    const auto modes = distinct_cache_modes(files_);
    filter.cache_mode =
        std::find(modes.begin(), modes.end(), "warm") != modes.end()
            ? "warm"
            : most_common(files_, [](const ResultRow& row) { return row.cache_mode; });
    filter_ = filter;
    filter_chosen_ = true;
  }
  changed();
  repair_selection();
}

void ExplorerState::set_file_shown(std::size_t index, bool shown) {
  if (index >= files_.size() || files_[index].shown == shown) return;
  files_[index].shown = shown;
  changed();
  repair_selection();  // the shown files may hold other head dimensions
}

std::size_t ExplorerState::row_count() const {
  std::size_t count = 0;
  for (const ResultFile& file : files_)
    count += file.rows.size();
  return count;
}

void ExplorerState::add_problem(std::string message) {
  std::cerr << "explorer: " << message << '\n';
  problems_.push_back(std::move(message));
}

const RowSet& ExplorerState::rows() {
  if (rows_generation_ != generation_) {
    rows_ = RowSet(select_rows(files_, filter_));
    rows_generation_ = generation_;
  }
  return rows_;
}

const std::vector<std::string>& ExplorerState::devices() {
  if (distinct_generation_ != generation_) {
    devices_ = distinct_devices(files_);
    cache_modes_ = distinct_cache_modes(files_);
    std::vector<const ResultRow*> of_model;
    for (const ResultFile& file : files_)
      for (const ResultRow& row : file.rows)
        if (filter_.device.empty() || row.device == filter_.device) of_model.push_back(&row);
    gpus_ = device_units(of_model);
    runs_ = distinct_runs(files_);
    workloads_ = distinct_workloads(files_);
    distinct_generation_ = generation_;
  }
  return devices_;
}

const std::vector<DeviceUnit>& ExplorerState::gpus() {
  devices();  // refreshes all four
  return gpus_;
}

const std::vector<RunChoice>& ExplorerState::runs() {
  devices();  // refreshes all four
  return runs_;
}

const std::vector<Problem>& ExplorerState::workloads() {
  devices();  // refreshes all of them
  return workloads_;
}

std::vector<int> ExplorerState::workload_values(Axis axis) {
  return workload_axis_values(workloads(), filter_.workload, axis);
}

void ExplorerState::set_workload_value(Axis axis, int value) {
  const auto found = filter_.workload.find(axis);
  if (found != filter_.workload.end() && found->second == value) return;
  filter_.workload[axis] = value;
  changed();
  repair_selection();
}

const std::vector<std::string>& ExplorerState::cache_modes() {
  devices();  // refreshes all four
  return cache_modes_;
}

void ExplorerState::set_filter(RowFilter filter) {
  if (filter.device == filter_.device && filter.cache_mode == filter_.cache_mode &&
      filter.gpu == filter_.gpu && filter.run == filter_.run && filter.workload == filter_.workload)
    return;
  if (filter.run != filter_.run) run_chosen_ = true;
  filter_ = std::move(filter);
  filter_chosen_ = true;
  changed();
  repair_selection();
}

void ExplorerState::repair_selection() {
  // One workload at a time: a file of another workload, or a filter reset, moves every axis to
  // a value present (the plain one — d_head 128, no mask, forward — when it is).
  WorkloadSelection repaired = repaired_workload(distinct_workloads(files_), filter_.workload);
  if (repaired != filter_.workload) {
    filter_.workload = std::move(repaired);
    changed();
  }
  // One run by default (issue 32): a progression of rows from several hosts or builds moves by
  // more than a step changes. The choice follows the device and workload until the user picks.
  if (!run_chosen_) {
    std::string run = default_run(files_, filter_);
    if (run != filter_.run) {
      filter_.run = std::move(run);
      changed();
    }
  }
  const RowSet& set = rows();
  const std::vector<std::string>& dtypes = set.dtypes();
  if (std::find(dtypes.begin(), dtypes.end(), selection.dtype) == dtypes.end()) {
    const bool has_fp16 = std::find(dtypes.begin(), dtypes.end(), "fp16") != dtypes.end();
    selection.dtype = has_fp16 ? "fp16" : (dtypes.empty() ? "" : dtypes.front());
    selection.seq_len.reset();
    // The seed's headline column is N = 4096; start there when it was measured.
    const std::vector<int>& seq_lens = set.seq_lens(selection.dtype);
    if (std::find(seq_lens.begin(), seq_lens.end(), 4096) != seq_lens.end())
      selection.seq_len = 4096;
  }
  if (selection.seq_len) {
    const std::vector<int>& seq_lens = set.seq_lens(selection.dtype);
    if (std::find(seq_lens.begin(), seq_lens.end(), *selection.seq_len) == seq_lens.end())
      selection.seq_len.reset();
  }
  // The percentages are of a reference the rows have: a run measured without FA2 (a build without
  // libtorch) shows its percentages of cuDNN rather than a column of "-".
  const auto measured = [&](Baseline baseline) {
    return std::any_of(set.rows().begin(), set.rows().end(), [&](const ResultRow* row) {
      return row->subject.which_baseline() == baseline;
    });
  };
  if (!measured(selection.baseline))
    for (const Baseline baseline : kBaselines)
      if (measured(baseline)) {
        selection.baseline = baseline;
        break;
      }
}

void ExplorerState::start_live_sweep(const std::string& device_name) {
  if (!live_file_) {
    ResultFile live;
    live.label = "live sweep on " + device_name + " (unsaved)";
    files_.push_back(std::move(live));
    live_file_ = files_.size() - 1;
  }
  // A fresh measurement is easiest to read on its own; other files can be re-enabled.
  for (std::size_t i = 0; i < files_.size(); ++i)
    files_[i].shown = i == *live_file_;
  files_[*live_file_].rows.clear();
  RowFilter filter;
  filter.device = device_name;
  filter_ = filter;
  filter_chosen_ = true;
  changed();
}

void ExplorerState::append_live_rows(std::vector<ResultRow> rows) {
  if (rows.empty() || !live_file_) return;
  ResultFile& live = files_[*live_file_];
  // Adopt the measured device and cache mode so the filter shows the new rows.
  if (live.rows.empty()) filter_ = RowFilter{rows.front().device, rows.front().cache_mode, "", ""};
  for (ResultRow& row : rows)
    live.rows.push_back(std::move(row));
  changed();
  repair_selection();
}

std::string ExplorerState::save_file(std::size_t index, const std::string& path) {
  if (index >= files_.size()) return "no such file";
  if (path.empty()) return "give a file name to save to";
  // Written whole or not at all: the rows go to PATH.partial, renamed over PATH once complete,
  // so a failed save leaves PATH as it was.
  const std::string partial = path + ".partial";
  {
    std::error_code error;
    if (std::filesystem::exists(std::filesystem::symlink_status(partial, error)))
      return partial + " exists, left by a run that did not finish (an interrupted sweep keeps " +
             "its rows there); move or delete it first: saving writes through that file";
  }
  std::set<std::string> metric_names;
  for (const ResultRow& row : files_[index].rows)
    for (const auto& [name, value] : row.extra_metrics)
      metric_names.insert(name);
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) return "cannot write " + partial;
    try {
      ResultsCsvWriter writer(out, {metric_names.begin(), metric_names.end()});
      for (const ResultRow& row : files_[index].rows)
        writer.write(row);
    } catch (const std::exception& error) {
      out.close();
      std::remove(partial.c_str());
      return path + ": " + error.what();
    }
    out.flush();
    if (!out) {
      out.close();
      std::remove(partial.c_str());
      return "writing " + partial + " failed; " + path + " is left as it was";
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    return "cannot rename " + partial + " to " + path;
  }
  files_[index].path = path;
  files_[index].label = short_file_label(path);
  // Once saved, the live rows are an ordinary file; the next sweep starts a new live file.
  if (live_file_ == index) live_file_.reset();
  return {};
}

}  // namespace flashscope::explorer
