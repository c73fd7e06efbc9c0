// What every view of the explorer shares: the loaded result files, load problems, the row
// filter (device, cache mode) and the common selection (dtype, N, reference, value mode).
//
// Row pointers handed to views stay valid until the files change. Files change only between
// frames (loading, streaming sweep rows), and every change bumps generation(), which views
// check before using cached pointers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "explorer/model/devices.hpp"
#include "explorer/model/result_files.hpp"
#include "explorer/model/row_set.hpp"
#include "explorer/model/sweep_series.hpp"
#include "explorer/sass/sass_library.hpp"

namespace flashscope::explorer {

enum class ViewId { progression, sweep, autotune, detail, compare, roofline };
inline constexpr ViewId kViews[] = {ViewId::progression, ViewId::sweep,   ViewId::autotune,
                                    ViewId::detail,      ViewId::compare, ViewId::roofline};

std::string_view view_name(ViewId view);   // "progression", ... (the --view values)
std::string_view view_title(ViewId view);  // tab label
std::optional<ViewId> view_from_name(std::string_view name);

struct Selection {
  std::string dtype;           // empty until data arrives
  std::optional<int> seq_len;  // nullopt: harmonic mean over N
  Baseline baseline = Baseline::fa2;
  PercentBasis basis = PercentBasis::time;  // % read by time or by cycles
  ValueMode mode = ValueMode::tflops;
  int detail_step = 1;
};

class ExplorerState {
 public:
  // Loads `paths`, skipping files already loaded; failures become problems (also printed to
  // stderr). Picks a device and cache mode when none is chosen yet.
  void load(const std::vector<std::string>& paths);

  const std::vector<ResultFile>& files() const { return files_; }
  void set_file_shown(std::size_t index, bool shown);
  std::size_t row_count() const;

  const std::vector<std::string>& problems() const { return problems_; }
  void add_problem(std::string message);
  void clear_problems() { problems_.clear(); }

  // Rows the progression, sweep, autotune and detail views use: shown files, filtered.
  const RowSet& rows();
  std::uint64_t generation() const { return generation_; }

  // Every device and cache mode in the loaded files, for the filter's choices.
  const std::vector<std::string>& devices();
  const std::vector<std::string>& cache_modes();
  // Every GPU (index, UUID) of the filter's device model in the loaded files.
  const std::vector<DeviceUnit>& gpus();
  const std::vector<RunChoice>& runs();  // every run (host, commit) in the loaded files
  // The workloads (problems without N and batch) of the shown files' rows; the filter always holds
  // one value of every selectable workload axis (d_head, heads, heads_kv, mask, pass) that one of
  // them has — the plain value when present — so no view mixes two problems.
  const std::vector<Problem>& workloads();
  // The values the selector of `axis` offers: those a workload has together with the values
  // selected for the axes before it.
  std::vector<int> workload_values(Axis axis);
  // Selects `value` of `axis`; the axes after it move to a value present with it if needed.
  void set_workload_value(Axis axis, int value);

  const RowFilter& filter() const { return filter_; }
  void set_filter(RowFilter filter);

  Selection selection;
  // Keeps the selection pointing at values that exist (after loads or filter changes).
  void repair_selection();

  // Rows measured in this session go to one "live sweep" file, created on first use.
  void start_live_sweep(const std::string& device_name);
  void append_live_rows(std::vector<ResultRow> rows);
  std::optional<std::size_t> live_file_index() const { return live_file_; }
  // Writes a file's rows as a results CSV; returns an error message, or empty on success.
  // Not while a sweep streams into that file: saving turns the live file into a normal one.
  std::string save_file(std::size_t index, const std::string& path);

  // Views ask for another view (a click on a bar opens that step's detail).
  std::optional<ViewId> requested_view;
  // A view's workload selector asks for another value of an axis; the app applies it
  // (set_workload_value) at the start of the next frame, so no view's row pointers change under
  // it mid-frame.
  std::optional<std::pair<Axis, int>> requested_workload_value;

  // The SASS the views show (the build's artifact, else the shipped one; set once at start).
  sass::SassLibrary sass;

 private:
  void changed() { ++generation_; }

  std::vector<ResultFile> files_;
  std::vector<std::string> problems_;
  RowFilter filter_;
  bool filter_chosen_ = false;
  // Until the user picks a run (or "every run"), the filter follows default_run(): the newest run
  // covering the most steps on the chosen device and workload.
  bool run_chosen_ = false;
  std::optional<std::size_t> live_file_;
  std::uint64_t generation_ = 1;
  std::uint64_t rows_generation_ = 0;
  RowSet rows_;
  std::uint64_t distinct_generation_ = 0;
  std::vector<std::string> devices_;
  std::vector<std::string> cache_modes_;
  std::vector<DeviceUnit> gpus_;
  std::vector<Problem> workloads_;
  std::vector<RunChoice> runs_;
};

}  // namespace flashscope::explorer
