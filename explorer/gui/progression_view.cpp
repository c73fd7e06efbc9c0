#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "explorer/gui/views.hpp"
#include "kernels/common/config.hpp"
#include "explorer/model/step_pages.hpp"
#include "explorer/model/steps.hpp"
#include "explorer/plot/plot.hpp"

namespace flashscope::explorer::gui {

namespace {

std::optional<double> shown_value(const StepValue& value, ValueMode mode, PercentBasis basis) {
  if (mode == ValueMode::tflops) return value.tflops;
  return value.percent_by(basis);
}

std::string format_value(double value, ValueMode mode) {
  char text[32];
  std::snprintf(text, sizeof text, mode == ValueMode::tflops ? "%.1f" : "%.1f%%", value);
  return text;
}

std::string describe_seq_lens(const Progression& progression, bool harmonic_mean) {
  if (!harmonic_mean)
    return progression.seq_lens.empty() ? "" : "N = " + std::to_string(progression.seq_lens[0]);
  if (progression.seq_lens.empty()) return "no N measured";
  return "harmonic mean over N = " + std::to_string(progression.seq_lens.front()) + " .. " +
         std::to_string(progression.seq_lens.back()) + " (" +
         std::to_string(progression.seq_lens.size()) + " values)";
}

void step_value_tooltip(const RowSet& set, const StepValue& value, const Progression& progression,
                        bool harmonic_mean) {
  ImGui::BeginTooltip();
  const int step = step_order(value.step);
  const std::string_view title = step_title(step);
  if (!title.empty())
    ImGui::TextColored(kHeadingColour, "%.*s", static_cast<int>(title.size()), title.data());
  if (harmonic_mean) {
    ImGui::TextColored(kHeadingColour, "%s", step_label(value.step).c_str());
    ImGui::Text("%s", value.config.c_str());
    ImGui::Text("harmonic mean %.1f TFLOP/s over %zu of %zu N", value.tflops, value.rows.size(),
                progression.seq_lens.size());
    if (ImGui::BeginTable("##per_n", 7, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg)) {
      for (const char* header :
           {"N", "TFLOP/s", "median ms", "registers", "L2 hit %", "cycles", "tensor pipe %"})
        ImGui::TableSetupColumn(header);
      ImGui::TableHeadersRow();
      for (const ResultRow* row : value.rows) {
        ImGui::TableNextRow();
        for (Field field : {Field::seq_len, Field::tflops, Field::median_ms, Field::registers,
                            Field::l2_hit_pct, Field::cycles, Field::tensor_pipe_pct}) {
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(format_field(set, *row, field).c_str());
        }
      }
      ImGui::EndTable();
    }
  } else if (!value.rows.empty()) {
    row_details(set, *value.rows.front());
  }
  if (step_order(value.step) < 1000) ImGui::TextColored(kMutedColour, "click: open step detail");
  ImGui::EndTooltip();
}

}  // namespace

const Progression& ProgressionCache::get(ExplorerState& state) {
  const Selection& selection = state.selection;
  const ProgressionQuery query{selection.dtype, selection.seq_len, selection.reference};
  if (generation_ != state.generation() || !(query == query_)) {
    progression_ = build_progression(state.rows(), query);
    generation_ = state.generation();
    query_ = query;
  }
  return progression_;
}

void ProgressionView::draw(ExplorerState& state) {
  selection_controls(state);
  const Selection& selection = state.selection;
  const Progression& progression = cache_.get(state);
  const RowSet& set = state.rows();
  const bool harmonic_mean = !selection.seq_len.has_value();
  const ValueMode mode = selection.mode;

  ImGui::TextColored(kMutedColour, "%s, %s: %s", selection.dtype.c_str(),
                     describe_seq_lens(progression, harmonic_mean).c_str(),
                     harmonic_mean ? "one config per step (the one measured at the most N)"
                                   : "each step's fastest config");
  if (progression.steps.empty() && progression.references.empty()) {
    empty_view_message(
        "No usable rows for this dtype and N. Pick another dtype or N above, or enable more "
        "files on the left.");
    return;
  }

  std::vector<double> values;
  for (const auto* group : {&progression.steps, &progression.references})
    for (const StepValue& value : *group)
      if (const auto shown = shown_value(value, mode, selection.basis)) values.push_back(*shown);

  plot::Axis x_axis;
  x_axis.title = "step";
  x_axis.fit = {0.4, kStepCount + 0.6};
  x_axis.zoomable = false;
  for (int step = 1; step <= kStepCount; ++step)
    x_axis.categories.push_back({static_cast<double>(step), std::to_string(step)});
  plot::Axis y_axis;
  y_axis.title = mode == ValueMode::tflops
                     ? "TFLOP/s"
                     : "% of " + std::string(reference_label(selection.reference)) + " " +
                           std::string(percent_basis_label(selection.basis));
  y_axis.fit = plot::fit_range(values, plot::AxisScale::linear, 0.12, true);
  y_axis.zoomable = false;

  const float table_height = std::max(ImGui::GetContentRegionAvail().y * 0.36f, 120.0f);
  plot::Plot chart("##progression", ImVec2(0, -table_height), x_axis, y_axis);
  int missing_percent = 0;
  for (std::size_t i = 0; i < progression.steps.size(); ++i) {
    const StepValue& value = progression.steps[i];
    const int step = step_order(value.step);
    const auto shown = shown_value(value, mode, selection.basis);
    if (!shown) {
      ++missing_percent;
      continue;
    }
    const bool hovered = hovered_step_ == step;
    chart.bar(step, 0.7, *shown, step_colour(step, hovered ? 1.0f : 0.85f), static_cast<int>(i));
    chart.text_above(step, *shown, format_value(*shown, mode), IM_COL32(220, 222, 228, 255));
  }
  for (const StepValue& value : progression.references) {
    const auto shown = shown_value(value, mode, selection.basis);
    const auto reference = reference_from_key(value.step);
    if (shown && reference)
      chart.horizontal_line(
          *shown, reference_colour(*reference),
          std::string(reference_label(*reference)) + " " + format_value(*shown, mode));
  }
  // Steps 17+ are the Hopper track: wgmma, TMA and warp specialization on sm_90a, after the
  // seed's sixteen Ampere-instruction steps.
  chart.vertical_separator(kFirstHopperStep - 0.5, IM_COL32(150, 160, 190, 200),
                           "Hopper track (sm_90a)");
  const plot::Interaction interaction = chart.finish();
  hovered_step_.reset();
  if (interaction.hovered) {
    const StepValue& value = progression.steps[static_cast<std::size_t>(*interaction.hovered)];
    hovered_step_ = step_order(value.step);
    step_value_tooltip(set, value, progression, harmonic_mean);
  }
  if (interaction.clicked) {
    state.selection.detail_step =
        step_order(progression.steps[static_cast<std::size_t>(*interaction.clicked)].step);
    state.requested_view = ViewId::detail;
  }
  if (missing_percent > 0)
    ImGui::TextColored(kWarningColour,
                       selection.basis == PercentBasis::cycles
                           ? "%d step(s) have no %s row with cycles at the same shape in the same "
                             "run (counters off?), so no percentage by cycles."
                           : "%d step(s) have no %s row at the same shape in the same run, so no "
                             "percentage.",
                       missing_percent, std::string(reference_label(selection.reference)).c_str());

  // The same numbers as a table, with each step's change over the one before it.
  const ImGuiTableFlags flags = ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("##progression_table", 7, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("step");
    ImGui::TableSetupColumn("iteration");
    ImGui::TableSetupColumn("TFLOP/s");
    const std::string reference_name(reference_label(selection.reference));
    const std::string percent_header = "% of " + reference_name + " by time";
    const std::string cycles_header = "by cycles";
    ImGui::TableSetupColumn(percent_header.c_str());
    ImGui::TableSetupColumn(cycles_header.c_str());
    ImGui::TableSetupColumn("vs previous step");
    ImGui::TableSetupColumn("config", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    const StepValue* previous = nullptr;
    for (const StepValue& value : progression.steps) {
      const int step = step_order(value.step);
      ImGui::TableNextRow();
      if (step == kFirstHopperStep) {  // the table marks the track's start too
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(40, 44, 58, 255));
      }
      ImGui::TableNextColumn();
      const std::string id = std::to_string(step) + "##step_row";
      if (ImGui::Selectable(id.c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) {
        state.selection.detail_step = step;
        state.requested_view = ViewId::detail;
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(step_title(step).data(),
                             step_title(step).data() + step_title(step).size());
      ImGui::TableNextColumn();
      ImGui::Text("%.1f", value.tflops);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(value.percent, 1).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(value.percent_cycles, 1).c_str());
      ImGui::TableNextColumn();
      if (previous && previous->tflops > 0) {
        const double change = (value.tflops / previous->tflops - 1.0) * 100.0;
        if (std::fabs(change) < 0.05)  // rounds to zero: neither better nor worse (no "-0.0%")
          ImGui::TextColored(kMutedColour, "0.0%%");
        else
          ImGui::TextColored(change > 0 ? kBetterColour : kWorseColour, "%+.1f%%", change);
      } else {
        ImGui::TextColored(kMutedColour, "-");
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(value.config.c_str());
      previous = &value;
    }
    for (const StepValue& value : progression.references) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(step_label(value.step).c_str());
      ImGui::TableNextColumn();
      ImGui::TextColored(kMutedColour, "reference");
      ImGui::TableNextColumn();
      ImGui::Text("%.1f", value.tflops);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(value.percent, 1).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(value.percent_cycles, 1).c_str());
      ImGui::TableNextColumn();
      ImGui::TableNextColumn();
    }
    ImGui::EndTable();
  }
}

}  // namespace flashscope::explorer::gui
