#include <algorithm>
#include <string>
#include <vector>

#include "explorer/gui/views.hpp"
#include "explorer/plot/plot.hpp"

namespace flashscope::explorer::gui {

namespace {

ImU32 series_colour(const SweepSeries& series) {
  return subject_colour(series.subject);
}

}  // namespace

void SweepView::draw(ExplorerState& state) {
  const RowSet& set = state.rows();
  Selection& selection = state.selection;
  const std::vector<std::string>& available_dtypes = set.dtypes();
  if (dtypes_.empty() && !selection.dtype.empty()) dtypes_ = {selection.dtype};

  // dtype checkboxes, then the shared value mode and reference.
  for (const std::string& dtype : available_dtypes) {
    bool chosen = std::find(dtypes_.begin(), dtypes_.end(), dtype) != dtypes_.end();
    if (ImGui::Checkbox(dtype.c_str(), &chosen)) {
      if (chosen)
        dtypes_.push_back(dtype);
      else
        std::erase(dtypes_, dtype);
    }
    ImGui::SameLine();
  }
  value_mode_controls(selection);

  if (steps_generation_ != state.generation()) {
    available_steps_ = available_series_steps(set);
    steps_generation_ = state.generation();
  }
  SweepQuery query{available_steps_, dtypes_, selection.mode, selection.baseline, selection.basis};
  std::sort(query.dtypes.begin(), query.dtypes.end());
  if (generation_ != state.generation() || !(query == query_)) {
    series_ = build_sweep_series(set, query);
    generation_ = state.generation();
    query_ = query;
  }

  ImGui::SameLine();
  ImGui::TextUnformatted("   series:");
  ImGui::SameLine();
  auto show_where = [&](auto predicate) {
    for (const SweepSeries& series : series_)
      series_shown_[series.label] = predicate(series);
  };
  if (ImGui::SmallButton("all")) show_where([](const SweepSeries&) { return true; });
  ImGui::SameLine();
  if (ImGui::SmallButton("none")) show_where([](const SweepSeries&) { return false; });
  ImGui::SameLine();
  if (ImGui::SmallButton("references + first/last step")) {
    std::optional<int> first, last;
    for (const SweepSeries& series : series_)
      if (const auto step = series.subject.step()) {
        first = std::min(first.value_or(*step), *step);
        last = std::max(last.value_or(*step), *step);
      }
    show_where([&](const SweepSeries& series) {
      const auto step = series.subject.step();
      return !step || step == first || step == last;
    });
  }

  if (series_.empty()) {
    empty_view_message(dtypes_.empty() ? "Choose at least one dtype above."
                                       : "No usable rows for the chosen dtypes.");
    return;
  }

  std::vector<plot::LegendEntry> legend;
  std::vector<double> all_seq_lens, shown_values;
  for (const SweepSeries& series : series_) {
    bool& shown = series_shown_.try_emplace(series.label, true).first->second;
    legend.push_back({series.label, series_colour(series), &shown});
    for (const SeriesPoint& point : series.points) {
      all_seq_lens.push_back(point.seq_len);
      if (shown) shown_values.push_back(point.value);
    }
  }

  plot::Axis x_axis;
  x_axis.title = "sequence length N (log 2)";
  x_axis.scale = plot::AxisScale::log2;
  x_axis.fit = plot::fit_range(all_seq_lens, plot::AxisScale::log2, 0.05, false);
  plot::Axis y_axis;
  y_axis.title = selection.mode == ValueMode::tflops
                     ? "TFLOP/s"
                     : "% of " + std::string(baseline_label(selection.baseline)) + " " +
                           std::string(percent_basis_label(selection.basis));
  y_axis.fit = plot::fit_range(shown_values, plot::AxisScale::linear, 0.08, true);

  ImGui::TextColored(kMutedColour,
                     "each point: the step's fastest usable config at that N.  wheel: zoom "
                     "(shift: x only), drag: pan, double-click: reset, legend: toggle");
  plot::Plot chart("##sweep", ImVec2(0, 0), x_axis, y_axis, {0, legend});
  std::vector<double> xs, ys;
  // Items are numbered series * 1024 + point so a hovered point maps back to its row.
  constexpr int kPointsPerSeries = 1024;
  for (std::size_t s = 0; s < series_.size(); ++s) {
    const SweepSeries& series = series_[s];
    if (!series_shown_[series.label]) continue;
    xs.clear();
    ys.clear();
    for (const SeriesPoint& point : series.points) {
      xs.push_back(point.seq_len);
      ys.push_back(point.value);
    }
    // With two dtypes, the one not selected in the shared controls is drawn thinner.
    const bool second_dtype = query.dtypes.size() > 1 && series.dtype != selection.dtype;
    const ImU32 colour = series_colour(series);
    chart.line(xs, ys, colour, second_dtype ? 1.25f : 2.25f);
    for (std::size_t p = 0; p < series.points.size() && p < kPointsPerSeries; ++p) {
      const int item = static_cast<int>(s) * kPointsPerSeries + static_cast<int>(p);
      chart.marker(xs[p], ys[p], colour, second_dtype ? 2.5f : 3.5f, item);
    }
  }
  const plot::Interaction interaction = chart.finish();
  if (interaction.hovered) {
    const auto& series = series_[static_cast<std::size_t>(*interaction.hovered / kPointsPerSeries)];
    const auto& point =
        series.points[static_cast<std::size_t>(*interaction.hovered % kPointsPerSeries)];
    ImGui::BeginTooltip();
    row_details(set, *point.row);
    ImGui::EndTooltip();
  }
}

}  // namespace flashscope::explorer::gui
