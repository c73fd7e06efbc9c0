#include <algorithm>
#include <string>
#include <vector>

#include <imgui.h>
#include <imgui_stdlib.h>  // after imgui.h, which it needs

#include "explorer/gui/views.hpp"
#include "explorer/plot/plot.hpp"

namespace flashscope::explorer::gui {

namespace {

constexpr Field kAxisFields[] = {
    Field::tflops,           Field::pct_fa2,        Field::pct_cudnn,      Field::pct_fa2_cycles,
    Field::pct_cudnn_cycles, Field::registers,      Field::smem_bytes,     Field::l2_hit_pct,
    Field::cycles,           Field::median_ms,      Field::sm_clock_mhz,   Field::local_bytes,
    Field::tensor_pipe_pct,  Field::max_error_fp64, Field::rms_error_fp64, Field::seq_len};

// N, TFLOP/s and the config that names the row first, always in view (the layout below makes
// room for them), then the other numbers, which scroll sideways.
constexpr Field kTableFields[] = {Field::seq_len,        Field::tflops,          Field::config,
                                  Field::pct_fa2,        Field::pct_fa2_cycles,  Field::pct_cudnn,
                                  Field::median_ms,      Field::sm_clock_mhz,    Field::registers,
                                  Field::smem_bytes,     Field::local_bytes,     Field::l2_hit_pct,
                                  Field::cycles,         Field::tensor_pipe_pct, Field::verdict,
                                  Field::max_error_fp64, Field::rms_error_fp64,  Field::dtype};
// The table's N and TFLOP/s columns, its borders and scroll bar, beside the config column.
constexpr float kTableLeadWidth = 200;

bool field_combo(const char* label, Field& field) {
  bool changed = false;
  if (ImGui::BeginCombo(label, std::string(field_label(field)).c_str())) {
    for (Field candidate : kAxisFields) {
      if (ImGui::Selectable(std::string(field_label(candidate)).c_str(), candidate == field)) {
        changed = candidate != field;
        field = candidate;
      }
    }
    ImGui::EndCombo();
  }
  return changed;
}

// The step with the most rows (the latest on ties): where auto-tuning results usually are.
int step_with_most_rows(const RowSet& set) {
  std::map<int, int> counts;
  for (const ResultRow* row : set.rows())
    if (const auto step = row->step_number()) ++counts[*step];
  int best = 0, best_count = 0;
  for (const auto& [step, count] : counts) {
    if (count >= best_count) {
      best = step;
      best_count = count;
    }
  }
  return best;
}

const char* short_header(Field field) {
  switch (field) {
    case Field::registers:
      return "regs";
    case Field::smem_bytes:
      return "smem B";
    case Field::local_bytes:
      return "local B";
    case Field::median_ms:
      return "ms";
    default:
      return nullptr;
  }
}

}  // namespace

void AutotuneView::draw(ExplorerState& state) {
  const RowSet& set = state.rows();
  const std::vector<int>& steps = set.steps();
  // Start on the step with the most rows, and move there again when the data no longer has the
  // chosen step or dtype (another file or device was picked).
  const auto& dtypes = set.dtypes();
  if (std::find(steps.begin(), steps.end(), query_.step) == steps.end() ||
      (!query_.dtype.empty() &&
       std::find(dtypes.begin(), dtypes.end(), query_.dtype) == dtypes.end())) {
    query_.step = step_with_most_rows(set);
    query_.dtype = state.selection.dtype;
    query_.seq_len.reset();
  }

  // Step, dtype and N selection; axes.
  auto label = [](const char* text) {
    ImGui::TextUnformatted(text);
    ImGui::SameLine();
  };
  label("step");
  ImGui::SetNextItemWidth(60);
  if (ImGui::BeginCombo("##autotune_step",
                        query_.step > 0 ? std::to_string(query_.step).c_str() : "")) {
    for (const int step : steps)
      if (ImGui::Selectable(std::to_string(step).c_str(), step == query_.step)) query_.step = step;
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  label("dtype");
  ImGui::SetNextItemWidth(80);
  string_combo("##autotune_dtype", query_.dtype, set.dtypes(), "all");
  ImGui::SameLine();
  workload_controls(state);
  ImGui::SetNextItemWidth(130);
  seq_len_combo("##autotune_n", query_.seq_len, set.seq_lens(query_.dtype), "every N");
  ImGui::SameLine();
  label("  x");
  ImGui::SetNextItemWidth(200);
  field_combo("##x_axis", x_field_);
  ImGui::SameLine();
  label("y");
  ImGui::SetNextItemWidth(200);
  field_combo("##y_axis", y_field_);

  rebuild(state);
  if (model_.points.empty()) {
    empty_view_message("No rows for this step and dtype. Choose another step above.");
    return;
  }
  // Chart and table side by side when half the width shows N, TFLOP/s and the longest config
  // whole; otherwise (a narrow window, long configs) the chart above the table.
  const ImVec2 available = ImGui::GetContentRegionAvail();
  if (available.x * 0.5f >= widest_config_ + kTableLeadWidth) {
    draw_chart(state, ImVec2(available.x * 0.5f, 0));
    ImGui::SameLine();
  } else {
    draw_chart(state, ImVec2(0, available.y * 0.45f));
  }
  draw_table(state);
}

void AutotuneView::rebuild(ExplorerState& state) {
  const bool data_changed = generation_ != state.generation() || !(query_ == built_query_);
  if (data_changed) {
    model_ = build_autotune_model(state.rows(), query_);
    fastest_ = std::set<const ResultRow*>(model_.fastest.begin(), model_.fastest.end());
    if (selected_ && generation_ != state.generation()) selected_ = nullptr;
    widest_config_ = 0;
    for (const AutotunePoint& point : model_.points)
      widest_config_ = std::max(
          widest_config_,
          ImGui::CalcTextSize(format_field(state.rows(), *point.row, Field::config).c_str()).x);
  }
  if (data_changed || filter_text_ != built_filter_ || sort_keys_ != built_sort_) {
    std::vector<const ResultRow*> rows;
    rows.reserve(model_.points.size());
    for (const AutotunePoint& point : model_.points)
      rows.push_back(point.row);
    table_rows_ = filter_rows(rows, RowTextFilter(filter_text_));
    sort_rows(table_rows_, sort_keys_, state.rows());
    built_filter_ = filter_text_;
    built_sort_ = sort_keys_;
  }
  generation_ = state.generation();
  built_query_ = query_;
}

void AutotuneView::draw_chart(ExplorerState& state, ImVec2 size) {
  const RowSet& set = state.rows();
  ImGui::BeginChild("##autotune_chart", size);

  // Resolve both coordinates once; rows without one of them cannot be placed.
  struct Placed {
    double x, y;
    std::size_t point;
  };
  std::vector<Placed> placed;
  std::vector<double> xs, ys;
  placed.reserve(model_.points.size());
  std::size_t unplaced = 0;
  for (std::size_t i = 0; i < model_.points.size(); ++i) {
    const AutotunePoint& point = model_.points[i];
    const auto shape = point.shape ? block_shape_label(*point.shape) : std::string("other");
    const auto found = shape_shown_.find(shape);
    if (found != shape_shown_.end() && !found->second) continue;
    const auto x = numeric_field(set, *point.row, x_field_);
    const auto y = numeric_field(set, *point.row, y_field_);
    if (!x || !y || !is_usable(*point.row)) {
      ++unplaced;
      continue;
    }
    placed.push_back({*x, *y, i});
    xs.push_back(*x);
    ys.push_back(*y);
  }

  ImGui::TextColored(kMutedColour, "%zu points (config x N); white ring: fastest at its N",
                     placed.size());
  if (unplaced > 0)
    ImGui::TextColored(kWarningColour, "%zu rows not plotted: no %s or %s value, or not ok",
                       unplaced, std::string(field_label(x_field_)).c_str(),
                       std::string(field_label(y_field_)).c_str());

  const auto scale_of = [](Field field) {
    return field == Field::seq_len ? plot::AxisScale::log2 : plot::AxisScale::linear;
  };
  plot::Axis x_axis{std::string(field_label(x_field_)),
                    scale_of(x_field_),
                    plot::fit_range(xs, scale_of(x_field_), 0.06, false),
                    {},
                    true};
  plot::Axis y_axis{std::string(field_label(y_field_)),
                    scale_of(y_field_),
                    plot::fit_range(ys, scale_of(y_field_), 0.06, false),
                    {},
                    true};

  std::vector<plot::LegendEntry> legend;
  for (const BlockShape& shape : model_.shapes) {
    bool& shown = shape_shown_.try_emplace(block_shape_label(shape), true).first->second;
    legend.push_back({"B_r x B_c = " + block_shape_label(shape),
                      plot::categorical_colour(model_.shape_index(shape)), &shown});
  }
  if (std::any_of(model_.points.begin(), model_.points.end(),
                  [](const AutotunePoint& point) { return !point.shape; })) {
    bool& shown = shape_shown_.try_emplace("other", true).first->second;
    legend.push_back({"unparsed config", plot::categorical_colour(model_.shapes.size()), &shown});
  }

  plot::Plot chart("##autotune_scatter", ImVec2(0, 0), x_axis, y_axis, {0, legend});
  for (std::size_t i = 0; i < placed.size(); ++i) {
    const AutotunePoint& point = model_.points[placed[i].point];
    chart.marker(placed[i].x, placed[i].y,
                 plot::categorical_colour(model_.shape_index(point.shape), 0.8f), 3.5f,
                 static_cast<int>(i));
  }
  for (const Placed& item : placed) {
    const AutotunePoint& point = model_.points[item.point];
    if (point.fastest_at_seq_len) chart.ring(item.x, item.y, IM_COL32(255, 255, 255, 230), 7.0f);
    if (point.row == selected_)
      chart.ring(item.x, item.y, IM_COL32(255, 220, 60, 255), 10.0f, 2.5f);
  }
  const plot::Interaction interaction = chart.finish();
  if (interaction.hovered) {
    const AutotunePoint& point =
        model_.points[placed[static_cast<std::size_t>(*interaction.hovered)].point];
    ImGui::BeginTooltip();
    if (point.fastest_at_seq_len)
      ImGui::TextColored(kBetterColour, "fastest at N = %d", point.row->problem.seq_len);
    row_details(set, *point.row);
    ImGui::EndTooltip();
  }
  if (interaction.clicked) {
    selected_ = model_.points[placed[static_cast<std::size_t>(*interaction.clicked)].point].row;
    scroll_to_selected_ = true;
  }
  ImGui::EndChild();
}

void AutotuneView::draw_table(ExplorerState& state) {
  const RowSet& set = state.rows();
  ImGui::BeginGroup();
  ImGui::SetNextItemWidth(-FLT_MIN);
  ImGui::InputTextWithHint("##autotune_filter",
                           "filter: words all match, -word excludes, n=4096, \"quoted phrase\"",
                           &filter_text_);
  ImGui::TextColored(kMutedColour, "%zu of %zu rows; shift-click headers to sort on several",
                     table_rows_.size(), model_.points.size());

  const ImGuiTableFlags flags =
      ImGuiTableFlags_Sortable | ImGuiTableFlags_SortMulti | ImGuiTableFlags_BordersInnerH |
      ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX |
      ImGuiTableFlags_Resizable | ImGuiTableFlags_Hideable | ImGuiTableFlags_SizingFixedFit;
  constexpr int kColumns = static_cast<int>(std::size(kTableFields));
  if (ImGui::BeginTable("##autotune_table", kColumns, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (int c = 0; c < kColumns; ++c) {
      const Field field = kTableFields[c];
      ImGuiTableColumnFlags column_flags = 0;
      if (field == Field::tflops)
        column_flags |=
            ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending;
      const char* header = short_header(field);
      ImGui::TableSetupColumn(header ? header : std::string(field_label(field)).c_str(),
                              column_flags, 0.0f, static_cast<ImGuiID>(c));
    }
    ImGui::TableHeadersRow();

    if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsDirty) {
      sort_keys_.clear();
      for (int i = 0; i < specs->SpecsCount; ++i) {
        const ImGuiTableColumnSortSpecs& spec = specs->Specs[i];
        sort_keys_.push_back(
            {kTableFields[spec.ColumnUserID], spec.SortDirection == ImGuiSortDirection_Descending});
      }
      specs->SpecsDirty = false;
      rebuild(state);
    }

    int selected_index = -1;
    if (scroll_to_selected_ && selected_) {
      const auto found = std::find(table_rows_.begin(), table_rows_.end(), selected_);
      if (found != table_rows_.end())
        selected_index = static_cast<int>(found - table_rows_.begin());
    }
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(table_rows_.size()));
    if (selected_index >= 0) clipper.ForceDisplayRangeByIndices(selected_index, selected_index + 1);
    while (clipper.Step()) {
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const ResultRow* row = table_rows_[static_cast<std::size_t>(i)];
        ImGui::TableNextRow();
        if (fastest_.count(row))
          ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(60, 120, 60, 90));
        for (int c = 0; c < kColumns; ++c) {
          ImGui::TableNextColumn();
          const std::string text = format_field(set, *row, kTableFields[c]);
          if (c == 0) {  // the selectable that spans the row
            ImGui::PushID(i);
            if (ImGui::Selectable(text.c_str(), row == selected_,
                                  ImGuiSelectableFlags_SpanAllColumns))
              selected_ = row == selected_ ? nullptr : row;
            ImGui::PopID();
            if (ImGui::IsItemHovered()) {
              ImGui::BeginTooltip();
              row_details(set, *row);
              ImGui::EndTooltip();
            }
            if (i == selected_index) {
              ImGui::SetScrollHereY(0.5f);
              scroll_to_selected_ = false;
            }
          } else if (kTableFields[c] == Field::verdict && !row->status.ok()) {
            ImGui::TextColored(kWorseColour, "%s", row->status.text().c_str());
          } else if (kTableFields[c] == Field::verdict && row->verdict == Verdict::fail) {
            ImGui::TextColored(kWorseColour, "fail");
          } else {
            ImGui::TextUnformatted(text.c_str());
          }
        }
      }
    }
    ImGui::EndTable();
  }
  ImGui::EndGroup();
}

}  // namespace flashscope::explorer::gui
