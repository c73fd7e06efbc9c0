#include <imgui.h>
#include <imgui_stdlib.h>  // after imgui.h, which it needs

#include <string>
#include <vector>

#include "configs/config_sets.hpp"
#include "explorer/gui/views.hpp"
#include "explorer/model/hints.hpp"
#include "explorer/plot/plot.hpp"

namespace flashscope::explorer::gui {

namespace {

constexpr CompareColumn kColumns[] = {
    CompareColumn::step,     CompareColumn::config,   CompareColumn::dtype, CompareColumn::seq_len,
    CompareColumn::a_tflops, CompareColumn::b_tflops, CompareColumn::ratio};

const char* column_header(CompareColumn column) {
  switch (column) {
    case CompareColumn::step:
      return "step";
    case CompareColumn::config:
      return "config";
    case CompareColumn::dtype:
      return "dtype";
    case CompareColumn::seq_len:
      return "N";
    case CompareColumn::a_tflops:
      return "A TFLOP/s";
    case CompareColumn::b_tflops:
      return "B TFLOP/s";
    case CompareColumn::ratio:
      return "B / A";
  }
  return "?";
}

std::string file_caption(const ResultFile& file) {
  return file.label + "  (" + std::to_string(file.rows.size()) + " rows)";
}

bool file_combo(const char* label, std::size_t& index, const std::vector<ResultFile>& files) {
  bool changed = false;
  if (ImGui::BeginCombo(label, file_caption(files[index]).c_str())) {
    for (std::size_t i = 0; i < files.size(); ++i) {
      ImGui::PushID(static_cast<int>(i));
      if (ImGui::Selectable(file_caption(files[i]).c_str(), i == index) && i != index) {
        index = i;
        changed = true;
      }
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  return changed;
}

std::string devices_of(const std::vector<const ResultRow*>& rows) {
  std::set<std::string> devices;
  for (const ResultRow* row : rows) {
    std::string text = row->device;
    if (row->device_index) text += " GPU " + std::to_string(*row->device_index);
    devices.insert(text + ", " + row->cache_mode);
  }
  std::string text;
  for (const std::string& device : devices)
    text += (text.empty() ? "" : "; ") + device;
  return text;
}

ImVec4 ratio_colour(double ratio) {
  if (ratio > 1.005) return kBetterColour;
  if (ratio < 0.995) return kWorseColour;
  return kMutedColour;
}

}  // namespace

void CompareView::choose_gpus(std::string a, std::string b) {
  gpu_a_ = std::move(a);
  gpu_b_ = std::move(b);
  gpus_chosen_ = true;
}

void CompareView::draw(ExplorerState& state) {
  const std::vector<ResultFile>& files = state.files();
  if (files.empty()) {
    empty_view_message(
        "Compare needs result files: two files side by side, or two GPUs of one file. Start the "
        "explorer with two files (" +
        std::string(hints::kCompareTwoFiles) + "), or load a CSV with the box on the left.");
    return;
  }
  // Two GPUs asked for with one file loaded: both sides show that file.
  if (gpus_chosen_ && files.size() == 1) file_b_ = 0;
  // Until the user picks, open on two runs of the same kind whose rows pair (the newest two of
  // the device the other views show), or say what to pick.
  if (!gpus_chosen_ && !sides_chosen_ && default_generation_ != state.generation()) {
    default_generation_ = state.generation();
    const auto pair = default_compare_pair(files, state.filter().device);
    default_found_ = pair.has_value();
    if (pair) {
      file_a_ = pair->a;
      file_b_ = pair->b;
      default_note_ = "Opened on two runs of " + pair->device + " that share " +
                      std::to_string(pair->shared) + " measurements, " +
                      std::to_string(static_cast<int>(pair->overlap * 100 + 0.5)) +
                      " % of the smaller file's (" +
                      (pair->overlap >= 0.5 ? "the newest such re-run" : "no re-run is loaded") +
                      "; older as A, newer as B); choose other files above.";
    } else {
      file_a_ = 0;
      file_b_ = std::min<std::size_t>(1, files.size() - 1);
      default_note_ =
          "No two loaded files share a measurement (same step, config, dtype and shape) on " +
          (state.filter().device.empty() ? std::string("one device") : state.filter().device) +
          ": choose A and B above, e.g. two runs of the same sweep plan, or one file's two GPUs "
          "(--compare-gpus 0,1); or load such a file with the Open box.";
    }
  }
  file_a_ = std::min(file_a_, files.size() - 1);
  file_b_ = std::min(file_b_, files.size() - 1);

  const float side_width = ImGui::GetContentRegionAvail().x * 0.5f - 40;
  const auto side = [&](const char* file_label, const char* gpu_label, std::size_t& file,
                        std::string& gpu, const std::vector<DeviceUnit>& units) {
    ImGui::SetNextItemWidth(side_width * 0.62f);
    if (file_combo(file_label, file, files)) {
      gpu.clear();
      sides_chosen_ = true;
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(side_width * 0.38f - 20);
    gpu_combo(gpu_label, gpu, units, "any GPU");
  };
  side("A##compare_a", "##compare_gpu_a", file_a_, gpu_a_, units_a_);
  ImGui::SameLine();
  if (ImGui::Button("swap")) {
    sides_chosen_ = true;
    std::swap(file_a_, file_b_);
    std::swap(gpu_a_, gpu_b_);
  }
  ImGui::SameLine();
  side("B##compare_b", "##compare_gpu_b", file_b_, gpu_b_, units_b_);
  const bool inputs_changed = generation_ != state.generation() || built_a_ != file_a_ ||
                              built_b_ != file_b_ || built_gpu_a_ != gpu_a_ ||
                              built_gpu_b_ != gpu_b_;
  if (inputs_changed) {
    const std::vector<const ResultRow*> all_a = all_rows(files[file_a_]);
    const std::vector<const ResultRow*> all_b = all_rows(files[file_b_]);
    units_a_ = device_units(all_a);
    units_b_ = device_units(all_b);
    const std::vector<const ResultRow*> rows_a = rows_on_gpu(all_a, gpu_a_);
    const std::vector<const ResultRow*> rows_b = rows_on_gpu(all_b, gpu_b_);
    comparison_ = compare_results(rows_a, rows_b);
    reference_mismatch_ = reference_version_mismatch(rows_a, rows_b).value_or(std::string());
    devices_a_ = devices_of(rows_a);
    devices_b_ = devices_of(rows_b);
  }
  if (!sides_chosen_ && !gpus_chosen_ && !default_note_.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(default_found_ ? kMutedColour : kWarningColour, "%s", default_note_.c_str());
    ImGui::PopTextWrapPos();
  }
  ImGui::TextColored(kMutedColour, "A: %s", devices_a_.empty() ? "no rows" : devices_a_.c_str());
  ImGui::TextColored(kMutedColour, "B: %s", devices_b_.empty() ? "no rows" : devices_b_.c_str());
  if (file_a_ == file_b_ && gpu_a_ == gpu_b_)
    ImGui::TextColored(kWarningColour,
                       "A and B are the same rows: choose another file or another GPU for one "
                       "side.");
  if (!reference_mismatch_.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(kWarningColour, "%s.", reference_mismatch_.c_str());
    ImGui::PopTextWrapPos();
  }
  if (!comparison_.duplicates_a.empty() || !comparison_.duplicates_b.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(kWarningColour,
                       "A holds %zu and B %zu measurements more than once (two runs in one file?): "
                       "the fastest usable copy of each is paired; explorer compare refuses such "
                       "files and lists the copies.",
                       comparison_.duplicates_a.size(), comparison_.duplicates_b.size());
    ImGui::PopTextWrapPos();
  }
  if (inputs_changed || built_filter_ != filter_text_ || built_sort_ != sort_keys_) {
    const RowTextFilter filter(filter_text_);
    table_rows_.clear();
    for (const ComparedRow& row : comparison_.rows)
      if ((row.a && filter.matches(*row.a)) || (row.b && filter.matches(*row.b)))
        table_rows_.push_back(row);
    sort_compared_rows(table_rows_, sort_keys_);
    built_filter_ = filter_text_;
    built_sort_ = sort_keys_;
  }
  generation_ = state.generation();
  built_a_ = file_a_;
  built_b_ = file_b_;
  built_gpu_a_ = gpu_a_;
  built_gpu_b_ = gpu_b_;

  ImGui::Text("%d paired, %d only in A, %d only in B.", comparison_.paired, comparison_.only_a,
              comparison_.only_b);
  if (comparison_.geometric_mean_ratio) {
    ImGui::SameLine();
    ImGui::TextColored(ratio_colour(*comparison_.geometric_mean_ratio),
                       "B / A TFLOP/s, geometric mean over paired rows: %.3f",
                       *comparison_.geometric_mean_ratio);
  }

  // Per-step geometric mean ratio: where B gains or loses.
  if (!comparison_.per_step.empty()) {
    plot::Axis x_axis;
    x_axis.title = "step (references after " + std::to_string(configs::kLastStep) + ")";
    x_axis.zoomable = false;
    std::vector<double> ratios{1.0};
    std::vector<double> positions;
    for (const StepRatio& step : comparison_.per_step) {
      // Baselines (and any ceiling) stand after the last step, in the step column's order.
      const double position = step.subject.step()
                                  ? *step.subject.step()
                                  : configs::kLastStep + 1 +
                                        (step.subject.which_baseline()
                                             ? static_cast<int>(*step.subject.which_baseline())
                                             : static_cast<int>(std::size(kBaselines)));
      positions.push_back(position);
      ratios.push_back(step.geometric_mean);
      x_axis.categories.push_back(
          {position, step.subject.is_kernel() ? step.subject.text() : step.subject.label()});
    }
    x_axis.fit = {std::min(0.4, positions.front() - 0.6), positions.back() + 0.6};
    plot::Axis y_axis;
    y_axis.title = "B / A (geometric mean per step)";
    y_axis.fit = plot::fit_range(ratios, plot::AxisScale::linear, 0.15, false);
    y_axis.zoomable = false;
    const float label_column = ImGui::CalcTextSize("parity").x + 8;
    plot::Plot chart("##compare_steps", ImVec2(0, 190), x_axis, y_axis, {label_column, {}});
    for (std::size_t i = 0; i < comparison_.per_step.size(); ++i) {
      const double ratio = comparison_.per_step[i].geometric_mean;
      const ImU32 colour = ImGui::ColorConvertFloat4ToU32(ratio_colour(ratio));
      // Bars grow from parity, so gains point up and losses down.
      chart.bar(positions[i], 0.6, ratio, colour, static_cast<int>(i), 1.0);
    }
    chart.horizontal_line(1.0, IM_COL32(200, 200, 200, 200), "parity");
    const plot::Interaction interaction = chart.finish();
    if (interaction.hovered) {
      const StepRatio& step = comparison_.per_step[static_cast<std::size_t>(*interaction.hovered)];
      ImGui::SetTooltip("%s: B / A = %.3f over %d paired rows", step.subject.label().c_str(),
                        step.geometric_mean, step.pairs);
    }
  }

  ImGui::SetNextItemWidth(-FLT_MIN);
  ImGui::InputTextWithHint("##compare_filter",
                           "filter: words all match, -word excludes, step=7, n=4096, gpu=1",
                           &filter_text_);
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_SortMulti |
                                ImGuiTableFlags_SortTristate | ImGuiTableFlags_BordersInnerH |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit;
  constexpr int kColumnCount = static_cast<int>(std::size(kColumns));
  if (ImGui::BeginTable("##compare_table", kColumnCount, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (int c = 0; c < kColumnCount; ++c) {
      ImGuiTableColumnFlags column_flags = 0;
      if (kColumns[c] == CompareColumn::config) column_flags |= ImGuiTableColumnFlags_WidthStretch;
      // Paired rows first (rows without a ratio sort last), the largest loss at the top.
      if (kColumns[c] == CompareColumn::ratio) column_flags |= ImGuiTableColumnFlags_DefaultSort;
      ImGui::TableSetupColumn(column_header(kColumns[c]), column_flags, 0.0f,
                              static_cast<ImGuiID>(c));
    }
    ImGui::TableHeadersRow();
    if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsDirty) {
      sort_keys_.clear();
      for (int i = 0; i < specs->SpecsCount; ++i)
        sort_keys_.push_back({kColumns[specs->Specs[i].ColumnUserID],
                              specs->Specs[i].SortDirection == ImGuiSortDirection_Descending});
      specs->SpecsDirty = false;
    }
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(table_rows_.size()));
    while (clipper.Step()) {
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const ComparedRow& row = table_rows_[static_cast<std::size_t>(i)];
        const ResultRow& either = row.a ? *row.a : *row.b;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(either.subject.label().c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(config_text(either).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(dtype_text(either).c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%d", either.problem.seq_len);
        for (const ResultRow* side : {row.a, row.b}) {
          ImGui::TableNextColumn();
          if (side == nullptr)
            ImGui::TextColored(kMutedColour, "not measured");
          else if (!is_usable(*side))
            ImGui::TextColored(kWorseColour, "%s",
                               !side->status.ok() ? side->status.text().c_str() : "failed check");
          else
            ImGui::Text("%.1f", side->tflops);
        }
        ImGui::TableNextColumn();
        if (row.ratio) {
          // Coloured only where the rows' 95 % intervals are disjoint; a ratio within them is
          // noise and shown muted with "~" (docs/explorer.md, "Compare").
          if (row.significance == Significance::within_noise)
            ImGui::TextColored(kMutedColour, "~%.3f", *row.ratio);
          else
            ImGui::TextColored(ratio_colour(*row.ratio), "%.3f", *row.ratio);
          if (ImGui::IsItemHovered() && row.significance != Significance::no_interval)
            ImGui::SetTooltip("A %.4f ms [%.4f, %.4f], B %.4f ms [%.4f, %.4f]: %s",
                              row.a->median_ms, *row.a->ci_low_ms, *row.a->ci_high_ms,
                              row.b->median_ms, *row.b->ci_low_ms, *row.b->ci_high_ms,
                              std::string(significance_name(row.significance)).c_str());
        } else {
          ImGui::TextColored(kMutedColour, "-");
        }
      }
    }
    ImGui::EndTable();
  }
}

}  // namespace flashscope::explorer::gui
