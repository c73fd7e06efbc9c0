// Small ImGui building blocks shared by the views: selectors, the row tooltip, markdown and
// diff text, and the colours that carry meaning (better / worse).
#pragma once

#include <imgui.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "explorer/gui/explorer_state.hpp"
#include "explorer/model/devices.hpp"
#include "explorer/model/markdown.hpp"
#include "explorer/model/row_set.hpp"

namespace flashscope::explorer::gui {

inline const ImVec4 kBetterColour(0.45f, 0.85f, 0.45f, 1.0f);
inline const ImVec4 kWorseColour(0.95f, 0.45f, 0.40f, 1.0f);
inline const ImVec4 kMutedColour(0.60f, 0.62f, 0.66f, 1.0f);
inline const ImVec4 kHeadingColour(0.55f, 0.75f, 1.0f, 1.0f);
inline const ImVec4 kWarningColour(1.0f, 0.75f, 0.30f, 1.0f);

// Colours of the reference levels, the same in every chart.
ImU32 baseline_colour(Baseline baseline);
// Steps 1..16 along a blue-to-yellow ramp, so neighbouring steps look related.
ImU32 step_colour(int step, float alpha = 1.0f);
// A baseline's colour, or its step's (a ceiling gets the first step's).
ImU32 subject_colour(const RowSubject& subject);

// A combo over `options`; returns true when the value changed.
bool string_combo(const char* label, std::string& value, const std::vector<std::string>& options,
                  const char* any_label = nullptr);

// One GPU among `units` (DeviceUnit::selector() into `selector`), or "" shown as `any_label`.
bool gpu_combo(const char* label, std::string& selector, const std::vector<DeviceUnit>& units,
               const char* any_label);

// The N selector: one of `seq_lens`, or nullopt shown as `all_label` (what "every N" means is
// the caller's: a harmonic mean, or no filter).
bool seq_len_combo(const char* label, std::optional<int>& seq_len, const std::vector<int>& seq_lens,
                   const char* all_label);

// The controls the progression and detail views share: dtype, N (or the harmonic mean over N),
// TFLOP/s or % of a reference.
void selection_controls(ExplorerState& state);
// The "show TFLOP/s | % of <reference>" controls alone (the sweep view picks its own dtypes).
void value_mode_controls(Selection& selection);
// "d_head [64]  KV heads [8 (groups of 4)]  causal [non-causal]": one selector per workload axis
// the shown files vary (each then followed by SameLine); nothing for an axis they do not vary.
void workload_controls(ExplorerState& state);

// The body of a tooltip describing one measured row.
void row_details(const RowSet& set, const ResultRow& row);

// Centred, wrapped explanation for a view that has nothing to draw.
void empty_view_message(std::string_view message);

// Renders parsed markdown (explorer/model/markdown.hpp): headings, wrapped paragraphs and list
// items with code spans in a code colour, tables as ImGui tables, code blocks.
void markdown_blocks(const std::vector<MarkdownBlock>& blocks);

// A unified diff with coloured +/- lines; only visible lines are submitted, so long diffs
// scroll smoothly. Keeps the line index of the last text it was given.
class DiffText {
 public:
  void draw(std::string_view diff, const char* id);

 private:
  std::string_view indexed_;
  std::vector<std::string_view> lines_;
};

}  // namespace flashscope::explorer::gui
