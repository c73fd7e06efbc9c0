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
#include "explorer/model/compare.hpp"
#include "explorer/model/fields.hpp"
#include "explorer/model/progression.hpp"
#include "explorer/model/sweep_runner.hpp"
#include "explorer/model/sweep_series.hpp"

namespace flashscope::explorer::gui {

// Memo of a Progression for the shared selection; ProgressionView and DetailView each own one.
class ProgressionCache {
 public:
  const Progression& get(ExplorerState& state);

 private:
  std::uint64_t generation_ = 0;
  ProgressionQuery query_;
  Progression progression_;
};

class ProgressionView {
 public:
  void draw(ExplorerState& state);

 private:
  ProgressionCache cache_;
  std::optional<int> hovered_step_;
};

class SweepView {
 public:
  void draw(ExplorerState& state);

 private:
  std::vector<std::string> dtypes_;  // chosen dtypes; empty: the shared selection's
  std::uint64_t steps_generation_ = 0;
  std::vector<std::string> available_steps_;  // every step column value present
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
  void draw_chart(ExplorerState& state, float width);
  void draw_table(ExplorerState& state);

  AutotuneQuery query_;
  Field x_field_ = Field::registers;
  Field y_field_ = Field::tflops;
  std::string filter_text_;
  std::vector<SortKey> sort_keys_{{Field::tflops, true}};
  std::map<std::string, bool> shape_shown_;  // by block-shape label

  std::uint64_t generation_ = 0;
  AutotuneQuery built_query_;
  std::string built_filter_;
  std::vector<SortKey> built_sort_;
  BlockShapeCache shape_cache_;
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

  ProgressionCache cache_;
  DiffText diff_text_;
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
  bool gpus_chosen_ = false;  // by choose_gpus: one loaded file then serves both sides
  std::string filter_text_;
  std::vector<CompareSortKey> sort_keys_;

  std::uint64_t generation_ = 0;
  std::size_t built_a_ = 0, built_b_ = 0;
  std::string built_gpu_a_, built_gpu_b_;
  std::string built_filter_;
  std::vector<CompareSortKey> built_sort_;
  Comparison comparison_;
  std::vector<ComparedRow> table_rows_;
  std::string devices_a_, devices_b_;          // "device, cache mode" of each side
  std::vector<DeviceUnit> units_a_, units_b_;  // the GPUs of each side's file
};

// Runs sweeps on this machine's GPU; without a runner it shows why it is unavailable.
class RunPanel {
 public:
  RunPanel(std::shared_ptr<SweepRunner> runner, std::string unavailable_reason);
  void draw(ExplorerState& state);
  // Moves rows the sweep delivered since the last frame into the state; call once per frame.
  void stream_rows(ExplorerState& state);
  bool busy() const;

 private:
  std::shared_ptr<SweepRunner> runner_;
  std::string unavailable_reason_;
  std::unique_ptr<SweepSession> session_;
  int config_set_ = 0;
  std::string custom_shape_ = "128,64";
  bool steps_[16] = {};
  std::vector<std::pair<int, bool>> seq_lens_;
  bool fp16_ = true;
  bool bf16_ = false;
  bool references_ = true;
  std::string save_path_ = "results/live.csv";
  std::string save_message_;
};

}  // namespace flashscope::explorer::gui
