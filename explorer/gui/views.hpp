// The explorer's views. Each draws into the current ImGui window and caches its model, rebuilt
// only when the data generation or its own selection changes, so a frame over 10,000 rows
// costs drawing, not aggregation.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "explorer/gui/explorer_state.hpp"
#include "explorer/gui/widgets.hpp"
#include "explorer/model/autotune.hpp"
#include "explorer/model/ceilings.hpp"
#include "explorer/model/compare.hpp"
#include "explorer/model/fields.hpp"
#include "explorer/model/markdown.hpp"
#include "explorer/model/progression.hpp"
#include "explorer/model/step_pages.hpp"
#include "explorer/model/sweep_session.hpp"
#include "explorer/model/sweep_series.hpp"

namespace flashscope::explorer::gui {

// Memo of a Progression for the shared selection, rebuilt when the data or the query changes;
// ProgressionView, DetailView and RooflineView own theirs. Over every shown row, or over the rows
// with DRAM byte counts only (rows_with_dram: the roofline's).
class ProgressionCache {
 public:
  enum class Rows { all, with_dram };
  explicit ProgressionCache(Rows rows = Rows::all) : rows_(rows) {}
  const Progression& get(ExplorerState& state);

 private:
  Rows rows_;
  std::uint64_t generation_ = 0;
  ProgressionQuery query_;
  RowSet dram_rows_;  // Rows::with_dram: the rows the progression points into
  Progression progression_;
};

// The tensor-core family a step's kernel issues, from its SASS (HGMMA: wgmma, HMMA: mma.sync, on
// any architecture); nullopt without a listing of that step.
std::optional<InstructionFamily> kernel_family(sass::SassLibrary& library, int step,
                                               const std::optional<KernelConfig>& config,
                                               std::optional<DType> dtype);

// A step's or reference's value as a share of its instruction family's ceiling (the family from
// the step's SASS; share_of_ceiling), at the value's TFLOP/s (a harmonic mean over N or one N).
std::optional<CeilingShare> value_share(ExplorerState& state, const Ceilings& ceilings,
                                        const StepValue& value);

class ProgressionView {
 public:
  void draw(ExplorerState& state);
  // Annotates the bars with this opcode's count (--progression-opcode); empty: none.
  void select_opcode(std::string opcode) { sass_opcode_ = std::move(opcode); }

 private:
  void sass_controls(ExplorerState& state);

  ProgressionCache cache_;
  std::optional<int> hovered_step_;
  bool show_ceilings_ = true;
  std::string sass_arch_;                  // the architecture whose SASS annotates the bars
  std::string sass_opcode_;                // empty: no annotation
  std::vector<std::string> sass_opcodes_;  // choices for sass_arch_, most frequent first
  std::string sass_opcodes_arch_;
};

// Step N's SASS against step N-1's: resources, the opcode histogram sorted by change, and the
// normalized disassembly diff with the main loop highlighted.
class SassTab {
 public:
  void draw(ExplorerState& state, int step, const Progression& progression);

 private:
  void draw_histogram(const sass::SassComparison& comparison);
  void draw_diff(const sass::SassComparison& comparison);

  std::string arch_;
  int grouping_ = 0;  // 0: by opcode, 1: by mnemonic
  bool changes_only_ = true;
  // The step's kernel chosen in the combo; nullopt: the measured one.
  std::optional<KernelConfig> kernel_config_;
  int kernel_step_ = 0;
  const sass::SassComparison* indexed_ = nullptr;  // what visible_ was built for
  bool indexed_changes_only_ = true;
  std::vector<std::size_t> visible_;  // diff line indices shown; kHunkBreak between hunks
};

// Every step and reference by arithmetic intensity (FLOP per DRAM byte) and TFLOP/s under the
// device's compute ceilings and memory roof.
class RooflineView {
 public:
  void draw(ExplorerState& state);

 private:
  ProgressionCache all_rows_;  // which steps the roofline cannot place
  ProgressionCache placed_{ProgressionCache::Rows::with_dram};
  bool show_ridge_ = false;  // widen the x-range to the ridge point
};

class SweepView {
 public:
  void draw(ExplorerState& state);

 private:
  std::vector<std::string> dtypes_;  // chosen dtypes; empty: the shared selection's
  std::uint64_t steps_generation_ = 0;
  std::vector<RowSubject> available_steps_;   // every step and baseline present
  std::map<std::string, bool> series_shown_;  // by series label; absent means shown
  std::uint64_t generation_ = 0;
  SweepQuery query_;
  std::vector<SweepSeries> series_;
};

class AutotuneView {
 public:
  void draw(ExplorerState& state);

 private:
  void rebuild(ExplorerState& state);
  void draw_chart(ExplorerState& state, ImVec2 size);
  void draw_table(ExplorerState& state);

  AutotuneQuery query_;
  float widest_config_ = 0;  // pixels of the longest config text among the model's rows
  Field x_field_ = Field::registers;
  Field y_field_ = Field::tflops;
  std::string filter_text_;
  std::vector<SortKey> sort_keys_{{Field::tflops, true}};
  std::map<std::string, bool> shape_shown_;  // by block-shape label

  std::uint64_t generation_ = 0;
  AutotuneQuery built_query_;
  std::string built_filter_;
  std::vector<SortKey> built_sort_;
  AutotuneModel model_;
  std::vector<const ResultRow*> table_rows_;
  std::set<const ResultRow*> fastest_;  // rows that are fastest at their (dtype, N)
  const ResultRow* selected_ = nullptr;
  bool scroll_to_selected_ = false;
};

class DetailView {
 public:
  void draw(ExplorerState& state);

 private:
  void draw_changes(ExplorerState& state, const Progression& progression, int step);
  void draw_ceiling_shares(ExplorerState& state, const StepValue* previous,
                           const StepValue& current);
  const std::vector<MarkdownBlock>& page_blocks(const StepPage& page);

  ProgressionCache cache_;
  const StepPage* parsed_page_ = nullptr;
  std::vector<MarkdownBlock> page_blocks_;
  DiffText diff_text_;
  SassTab sass_tab_;

 public:
  enum class Tab { documentation, source_diff, sass };
  // Opens `tab` on the next frame (--detail-tab).
  void select_tab(Tab tab) { requested_tab_ = tab; }

 private:
  std::optional<Tab> requested_tab_;
};

class CompareView {
 public:
  void draw(ExplorerState& state);
  // The GPU of each side (index or UUID prefix; "" any GPU of the file).
  void choose_gpus(std::string a, std::string b);

 private:
  std::size_t file_a_ = 0;
  std::size_t file_b_ = 1;
  std::string gpu_a_, gpu_b_;
  bool gpus_chosen_ = false;   // by choose_gpus: one loaded file then serves both sides
  bool sides_chosen_ = false;  // the user picked a file for a side: no more default pairing
  std::uint64_t default_generation_ = 0;  // the data default_compare_pair last looked at
  std::string default_note_;              // how the sides were chosen, or what to pick
  bool default_found_ = false;
  std::string filter_text_;
  std::vector<CompareSortKey> sort_keys_;

  std::uint64_t generation_ = 0;
  std::size_t built_a_ = 0, built_b_ = 0;
  std::string built_gpu_a_, built_gpu_b_;
  std::string built_filter_;
  std::vector<CompareSortKey> built_sort_;
  Comparison comparison_;
  std::string reference_mismatch_;  // reference_version_mismatch of the two sides, or empty
  std::vector<ComparedRow> table_rows_;
  std::string devices_a_, devices_b_;          // "device, cache mode" of each side
  std::vector<DeviceUnit> units_a_, units_b_;  // the GPUs of each side's file
};

// Lists every step the build has, grouped by track, with the number of kernels the chosen set
// measures for each (the sweep's own plan), and runs sweeps on this machine's GPU. Without a
// runner (no GPU) the choices stay open and the reason replaces the Run button; without a planner
// (a build without the sweep engine) the panel shows only the reason.
class RunPanel {
 public:
  RunPanel(std::shared_ptr<SweepPlanner> planner, std::shared_ptr<SweepRunner> runner,
           std::string unavailable_reason);
  void draw(ExplorerState& state);
  // Moves rows the sweep delivered since the last frame into the state; call once per frame.
  void stream_rows(ExplorerState& state);
  bool busy() const;
  // Ticks exactly these steps (--run-steps); returns the ones this build does not have.
  std::vector<int> choose_steps(const std::vector<int>& steps);
  // Starts the sweep the panel is set to, as the Run button does (--run-sweep); returns why it
  // cannot (no GPU, nothing chosen), or empty when it started.
  std::string start(ExplorerState& state);
  // One line for scripted runs: the tracks and steps listed, the steps ticked, the set and its
  // row count, and the state of the sweep started from the panel: its live rows, in how many
  // frames the progress bar was drawn (and the furthest count it showed), the live rows that had
  // arrived while it ran, and how many of them the views' rows hold.
  std::string summary(ExplorerState& state);

 private:
  SweepRequest request() const;
  void refresh_preview();
  void draw_steps();

  std::shared_ptr<SweepPlanner> planner_;
  std::shared_ptr<SweepRunner> runner_;
  std::string unavailable_reason_;
  std::unique_ptr<SweepSession> session_;
  int config_set_ = 0;
  std::string custom_shape_ = "128,64";
  std::vector<StepTrack> tracks_;  // every step the build has
  std::map<int, bool> steps_;      // ticked, by step
  // Each problem axis' suggested values (AxisSpec::suggested) and whether each is ticked: fp16,
  // N = 4096 and every other axis' default to start with.
  struct AxisChoice {
    std::vector<std::pair<int, bool>> values;
  };
  std::map<Axis, AxisChoice> axes_;
  bool baselines_ = true;
  // The plans of the chosen set over every step (the per-step counts) and of the request.
  std::optional<SweepRequest> previewed_;
  SweepPreview every_step_;
  SweepPreview chosen_;
  // What the panel showed of the last sweep: frames with the progress bar, the furthest
  // progress drawn, and the most live rows seen while it still ran.
  int progress_frames_ = 0;
  SweepProgress progress_shown_;
  std::size_t rows_while_running_ = 0;
  std::string save_path_ = "results/live.csv";
  std::string save_message_;
};

}  // namespace flashscope::explorer::gui
