#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "explorer/gui/views.hpp"
#include "explorer/model/hints.hpp"
#include "explorer/model/roofline.hpp"
#include "explorer/plot/plot.hpp"

namespace flashscope::explorer::gui {

namespace {

const ImU32 kMemoryRoofColour = IM_COL32(120, 200, 200, 255);
const ImU32 kRoofColours[] = {IM_COL32(255, 100, 170, 255), IM_COL32(190, 130, 255, 255)};

}  // namespace

void RooflineView::draw(ExplorerState& state) {
  selection_controls(state);
  const Selection& selection = state.selection;
  const Ceilings ceilings(state.rows().ceiling_rows());
  const Roofline roofline = build_roofline(placed_.get(state), ceilings, selection.dtype);
  const std::vector<RowSubject> not_placed = steps_not_placed(all_rows_.get(state), roofline);

  ImGui::TextColored(kMutedColour,
                     "%s: arithmetic intensity = 4·B·H·N²·d / (dram__bytes_read.sum + "
                     "dram__bytes_write.sum) of the profiled launch; roofs from explorer peak",
                     selection.dtype.c_str());
  if (roofline.points.empty()) {
    empty_view_message("No row has DRAM byte counts. Measure with\n  " +
                       std::string(hints::kSweepWithDram) + "\nand the device's ceilings with\n  " +
                       std::string(hints::kPeakToFile) + "\nthen open both files:\n  " +
                       std::string(hints::kOpenRoofline));
    return;
  }
  if (!not_placed.empty()) {
    std::string names;
    for (const RowSubject& step : not_placed)
      names += (names.empty() ? "" : ", ") + step.label();
    ImGui::TextColored(kWarningColour, "Not placed (no row with DRAM byte counts): %s.",
                       names.c_str());
  }
  if (roofline.compute_roofs.empty() || roofline.memory_roof == nullptr)
    ImGui::TextColored(kWarningColour,
                       "No %s ceilings for %s loaded: run %s on that device for the roofs.",
                       roofline.compute_roofs.empty() ? "compute" : "memory",
                       roofline.device.c_str(), std::string(hints::kPeakToFile).c_str());

  // Every step sits near the problem's own intensity (about N/2 FLOP per byte), far right of the
  // ridge point: the x-range fits the points, so their spread in intensity shows; the ridge point
  // (where the memory roof meets the highest compute roof) is named in the legend, and the
  // checkbox widens the range to include it.
  std::optional<double> ridge;
  if (roofline.memory_roof && !roofline.compute_roofs.empty())
    ridge = roofline.compute_roofs.front()->tflops * 1000.0 / roofline.memory_roof->gbytes_per_s;
  if (ridge) {
    ImGui::Checkbox("show the ridge point", &show_ridge_);
    ImGui::SameLine();
  }
  ImGui::TextColored(kMutedColour,
                     "labels sit beside their points, or in the column on the right "
                     "with a leader line where the points crowd");
  std::vector<double> xs, ys;
  for (const RooflinePoint& point : roofline.points) {
    xs.push_back(point.intensity);
    ys.push_back(point.tflops);
  }
  for (const ComputeCeiling* roof : roofline.compute_roofs)
    ys.push_back(roof->tflops);
  if (ridge && show_ridge_) xs.push_back(*ridge);
  const auto [x_low, x_high] = std::minmax_element(xs.begin(), xs.end());
  // Within a factor of four a log axis would show one or two ticks: read it linearly.
  const plot::AxisScale x_scale =
      *x_high > 4 * *x_low ? plot::AxisScale::log2 : plot::AxisScale::linear;

  plot::Axis x_axis;
  x_axis.title = "arithmetic intensity (FLOP per DRAM byte)";
  x_axis.scale = x_scale;
  x_axis.fit = plot::fit_range(xs, x_scale, 0.08, false);
  // Room right of the rightmost points for their labels (text reads rightwards from its point).
  const double x_span =
      plot::to_axis_space(x_axis.fit.max, x_scale) - plot::to_axis_space(x_axis.fit.min, x_scale);
  x_axis.fit.max =
      plot::from_axis_space(plot::to_axis_space(x_axis.fit.max, x_scale) + 0.1 * x_span, x_scale);
  plot::Axis y_axis;
  y_axis.title = "TFLOP/s";
  y_axis.scale = plot::AxisScale::log2;
  y_axis.fit = plot::fit_range(ys, plot::AxisScale::log2, 0.12, false);

  std::vector<std::string> roof_labels;
  for (const ComputeCeiling* roof : roofline.compute_roofs) {
    char label[96];
    std::snprintf(label, sizeof label, "%s ceiling %.0f TFLOP/s",
                  std::string(family_name(roof->family)).c_str(), roof->tflops);
    roof_labels.push_back(label);
  }
  float label_column = 0;
  for (const std::string& label : roof_labels)
    label_column = std::max(label_column, ImGui::CalcTextSize(label.c_str()).x);
  for (const RooflinePoint& point : roofline.points)
    label_column = std::max(label_column, ImGui::CalcTextSize(point.subject.label().c_str()).x);
  label_column += 12;

  std::vector<plot::LegendEntry> legend;
  if (roofline.memory_roof) {
    char label[160];
    if (ridge)
      std::snprintf(label, sizeof label, "HBM roof %.0f GB/s (%s), ridge at %.0f FLOP/byte",
                    roofline.memory_roof->gbytes_per_s, roofline.memory_roof->name.c_str(), *ridge);
    else
      std::snprintf(label, sizeof label, "HBM roof %.0f GB/s (%s)",
                    roofline.memory_roof->gbytes_per_s, roofline.memory_roof->name.c_str());
    legend.push_back({label, kMemoryRoofColour, nullptr});
  }
  for (const Baseline baseline : kBaselines)
    legend.push_back({std::string(baseline_label(baseline)), baseline_colour(baseline), nullptr});
  legend.push_back({"steps (colour by step)", step_colour(8), nullptr});
  plot::Plot chart("##roofline", ImVec2(0, 0), x_axis, y_axis, {label_column, legend});

  // Roofs: the memory roof (bandwidth x intensity) across the view, and a horizontal line per
  // compute ceiling; a step can reach neither above the lower of the two.
  const plot::Range view = chart.x_view();
  if (roofline.memory_roof) {
    const std::vector<double> roof_x = {view.min, view.max};
    const std::vector<double> roof_y = {roofline.memory_roof->gbytes_per_s * view.min / 1000.0,
                                        roofline.memory_roof->gbytes_per_s * view.max / 1000.0};
    chart.line(roof_x, roof_y, kMemoryRoofColour, 2.0f);
  }
  for (std::size_t i = 0; i < roofline.compute_roofs.size(); ++i)
    chart.horizontal_line(roofline.compute_roofs[i]->tflops, kRoofColours[i % 2], roof_labels[i]);
  for (std::size_t i = 0; i < roofline.points.size(); ++i) {
    const RooflinePoint& point = roofline.points[i];
    chart.marker(point.intensity, point.tflops, subject_colour(point.subject), 5.0f,
                 static_cast<int>(i));
  }
  if (selection.seq_len)  // one point per step: name it (the harmonic mean has one per N)
    for (const RooflinePoint& point : roofline.points)
      chart.point_label(point.intensity, point.tflops, point.subject.label(),
                        IM_COL32(220, 222, 228, 255));
  const plot::Interaction interaction = chart.finish();
  if (interaction.hovered) {
    const RooflinePoint& point = roofline.points[static_cast<std::size_t>(*interaction.hovered)];
    ImGui::BeginTooltip();
    ImGui::TextColored(kHeadingColour, "%s", point.subject.label().c_str());
    ImGui::Text("%.1f FLOP/byte, %.1f TFLOP/s", point.intensity, point.tflops);
    row_details(state.rows(), *point.row);
    ImGui::EndTooltip();
  }
  if (interaction.clicked) {
    const RooflinePoint& point = roofline.points[static_cast<std::size_t>(*interaction.clicked)];
    if (const auto step = point.row->step_number()) {
      state.selection.detail_step = *step;
      state.requested_view = ViewId::detail;
    }
  }
}

}  // namespace flashscope::explorer::gui
