#include "explorer/gui/widgets.hpp"

#include <algorithm>
#include <string>

#include "configs/config_sets.hpp"
#include "explorer/model/fields.hpp"

namespace flashscope::explorer::gui {

ImU32 baseline_colour(Baseline baseline) {
  // Orange and pink stay clear of the blue-to-yellow ramp that colours the steps.
  return baseline == Baseline::fa2 ? IM_COL32(242, 142, 43, 255) : IM_COL32(240, 90, 140, 255);
}

ImU32 subject_colour(const RowSubject& subject) {
  if (const auto baseline = subject.which_baseline()) return baseline_colour(*baseline);
  return step_colour(subject.step().value_or(1));
}

ImU32 step_colour(int step, float alpha) {
  // Viridis at five anchors, interpolated: readable on dark backgrounds and in greyscale.
  static constexpr float kAnchors[5][3] = {{0.28f, 0.14f, 0.45f},
                                           {0.23f, 0.32f, 0.55f},
                                           {0.13f, 0.57f, 0.55f},
                                           {0.37f, 0.79f, 0.38f},
                                           {0.99f, 0.91f, 0.14f}};
  const float t =
      std::clamp(static_cast<float>(step - 1) / (configs::kLastStep - 1), 0.0f, 1.0f) * 4.0f;
  const int low = std::min(static_cast<int>(t), 3);
  const float f = t - static_cast<float>(low);
  float rgb[3];
  for (int c = 0; c < 3; ++c)
    rgb[c] = kAnchors[low][c] + (kAnchors[low + 1][c] - kAnchors[low][c]) * f;
  return ImGui::ColorConvertFloat4ToU32(ImVec4(rgb[0], rgb[1], rgb[2], alpha));
}

bool string_combo(const char* label, std::string& value, const std::vector<std::string>& options,
                  const char* any_label) {
  bool changed = false;
  const std::string preview = value.empty() && any_label ? any_label : value;
  if (ImGui::BeginCombo(label, preview.c_str())) {
    if (any_label && ImGui::Selectable(any_label, value.empty())) {
      value.clear();
      changed = true;
    }
    for (const std::string& option : options) {
      const char* text = option.empty() ? "(none)" : option.c_str();
      if (ImGui::Selectable(text, option == value) && option != value) {
        value = option;
        changed = true;
      }
    }
    ImGui::EndCombo();
  }
  return changed;
}

bool gpu_combo(const char* label, std::string& selector, const std::vector<DeviceUnit>& units,
               const char* any_label) {
  bool changed = false;
  std::string preview = any_label;
  for (const DeviceUnit& unit : units)
    if (!selector.empty() && unit.selector() == selector) preview = unit.label();
  if (!selector.empty() && preview == any_label) preview = "GPU " + selector;  // typed, e.g. --gpu
  if (ImGui::BeginCombo(label, preview.c_str())) {
    if (ImGui::Selectable(any_label, selector.empty()) && !selector.empty()) {
      selector.clear();
      changed = true;
    }
    for (std::size_t i = 0; i < units.size(); ++i) {
      const DeviceUnit& unit = units[i];
      ImGui::PushID(static_cast<int>(i));
      const std::string text = unit.label() + "  (" + std::to_string(unit.rows) + " rows)";
      if (ImGui::Selectable(text.c_str(), unit.selector() == selector) &&
          unit.selector() != selector) {
        selector = unit.selector();
        changed = true;
      }
      if (ImGui::IsItemHovered() && !unit.uuid.empty())
        ImGui::SetTooltip("%s\n%s", unit.name.c_str(), unit.uuid.c_str());
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  return changed;
}

bool seq_len_combo(const char* label, std::optional<int>& seq_len, const std::vector<int>& seq_lens,
                   const char* all_label) {
  bool changed = false;
  const std::string preview = seq_len ? "N = " + std::to_string(*seq_len) : all_label;
  if (ImGui::BeginCombo(label, preview.c_str())) {
    if (ImGui::Selectable(all_label, !seq_len.has_value())) {
      changed = seq_len.has_value();
      seq_len.reset();
    }
    for (int value : seq_lens) {
      const std::string text = "N = " + std::to_string(value);
      if (ImGui::Selectable(text.c_str(), seq_len == value) && seq_len != value) {
        seq_len = value;
        changed = true;
      }
    }
    ImGui::EndCombo();
  }
  return changed;
}

void workload_controls(ExplorerState& state) {
  // Rows of two workloads are two problems (another d_head, head grouping, the mask, the pass):
  // one value of each axis at a time, chosen here for every axis the shown files vary. One
  // generic selector per axis of the table (kernels/common/problem_axes.hpp).
  for (const Axis axis : selectable_workload_axes()) {
    const std::vector<int> values = state.workload_values(axis);
    if (values.size() < 2) continue;
    const AxisSpec& spec = axis_spec(axis);
    const WorkloadSelection& selection = state.filter().workload;
    const auto selected = selection.find(axis);
    const std::string current =
        selected == selection.end() ? "" : workload_value_label(axis, selected->second, selection);
    ImGui::TextUnformatted(std::string(spec.label).c_str());
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::CalcTextSize(current.c_str()).x + 40);
    const std::string id = "##workload_" + std::string(spec.name);
    if (ImGui::BeginCombo(id.c_str(), current.c_str())) {
      for (const int value : values) {
        const bool is_selected = selected != selection.end() && selected->second == value;
        if (ImGui::Selectable(workload_value_label(axis, value, selection).c_str(), is_selected))
          state.requested_workload_value = {axis, value};  // applied before the next frame
      }
      ImGui::EndCombo();
    }
    ImGui::SameLine();
  }
}

void selection_controls(ExplorerState& state) {
  const RowSet& set = state.rows();
  Selection& selection = state.selection;
  ImGui::TextUnformatted("dtype");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(80);
  string_combo("##dtype", selection.dtype, set.dtypes());
  ImGui::SameLine();
  workload_controls(state);
  ImGui::SetNextItemWidth(190);
  seq_len_combo("##N", selection.seq_len, set.seq_lens(selection.dtype), "harmonic mean over N");
  ImGui::SameLine();
  value_mode_controls(selection);
}

void value_mode_controls(Selection& selection) {
  ImGui::TextUnformatted("  show");
  ImGui::SameLine();
  int mode = selection.mode == ValueMode::tflops ? 0 : 1;
  ImGui::RadioButton("TFLOP/s", &mode, 0);
  ImGui::SameLine();
  ImGui::RadioButton("% of", &mode, 1);
  selection.mode = mode == 0 ? ValueMode::tflops : ValueMode::percent_of_baseline;
  ImGui::SameLine();
  int baseline = selection.baseline == Baseline::fa2 ? 0 : 1;
  ImGui::SetNextItemWidth(80);
  ImGui::Combo("##reference", &baseline, "FA2\0cuDNN\0");
  selection.baseline = baseline == 0 ? Baseline::fa2 : Baseline::cudnn;
  ImGui::SameLine();
  // By time the percentage moves with the clock each row ran at; by cycles it does not.
  int basis = selection.basis == PercentBasis::time ? 0 : 1;
  ImGui::RadioButton("by time", &basis, 0);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("reference median / row median: includes any difference in SM clock");
  ImGui::SameLine();
  ImGui::RadioButton("by cycles", &basis, 1);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "reference cycles / row cycles (sm__cycles_elapsed.max): the same comparison at a "
        "common clock; needs hardware counters");
  selection.basis = basis == 0 ? PercentBasis::time : PercentBasis::cycles;
}

void row_details(const RowSet& set, const ResultRow& row) {
  ImGui::TextColored(kHeadingColour, "%s  %s  N = %d", row.subject.label().c_str(),
                     dtype_text(row).c_str(), row.problem.seq_len);
  if (row.config) ImGui::TextUnformatted(to_short_form(*row.config).c_str());
  if (ImGui::BeginTable("##row", 2, ImGuiTableFlags_SizingFixedFit)) {
    auto line = [&](const char* name, const std::string& value) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextColored(kMutedColour, "%s", name);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(value.c_str());
    };
    line("TFLOP/s", format_field(set, row, Field::tflops));
    line("% of FA2", format_field(set, row, Field::pct_fa2) + " by time, " +
                         format_field(set, row, Field::pct_fa2_cycles) + " by cycles");
    line("% of cuDNN", format_field(set, row, Field::pct_cudnn) + " by time, " +
                           format_field(set, row, Field::pct_cudnn_cycles) + " by cycles");
    line("median ms", format_field(set, row, Field::median_ms) + "  (" +
                          format_number(row.min_ms, 3) + " - " + format_number(row.max_ms, 3) +
                          ", " + std::to_string(row.runs) + " runs)");
    line("registers", format_field(set, row, Field::registers));
    line("shared mem", format_field(set, row, Field::smem_bytes) + " B");
    line("local mem", format_field(set, row, Field::local_bytes) + " B");
    line("L2 hit %", format_field(set, row, Field::l2_hit_pct));
    line("cycles", format_field(set, row, Field::cycles));
    if (const auto pipe = numeric_field(set, row, Field::tensor_pipe_pct))
      line("tensor pipe", format_field(set, row, Field::tensor_pipe_pct) + " % active");
    line("problem", problem_label(row.problem) + " B=" + std::to_string(row.problem.batch) +
                        " H=" + std::to_string(row.problem.heads) +
                        " d=" + std::to_string(row.problem.d_head));
    line("verdict",
         std::string(verdict_name(row.verdict)) +
             (row.max_error ? "  (max error " + format_field(set, row, Field::max_error) + ")"
                            : std::string()));
    // The FP8 rows' errors against the fp64 reference (fp8-track.md §2), cuDNN FP8's beside them.
    if (row.max_error_fp64 || row.rms_error_fp64)
      line("error vs fp64", "max " + format_field(set, row, Field::max_error_fp64) + ", RMS " +
                                format_field(set, row, Field::rms_error_fp64));
    if (!row.status.ok()) line("status", row.status.text());
    line("GPU state", clock_summary(row));
    line("measured", row.cache_mode + " cache, " + std::to_string(row.sm_clock_mhz) + " MHz" +
                         (row.locked_sm_clock_mhz
                              ? " (locked at " + std::to_string(*row.locked_sm_clock_mhz) + ")"
                              : std::string(" (clocks as found)")));
    line("run", run_label(row) + (row.reference_pass
                                      ? ", reference pass " + std::to_string(*row.reference_pass)
                                      : std::string()));
    if (!row.reference_version.empty() || !row.reference_variant.empty())
      line("reference", row.reference_version + (row.reference_variant.empty()
                                                     ? std::string()
                                                     : " (" + row.reference_variant + ")"));
    if (!row.fa2_entry_point.empty()) line("FA2 entry point", row.fa2_entry_point);
    if (!row.warnings.empty()) line("warnings", row.warnings);
    if (row.device_index || !row.device_uuid.empty())
      line("GPU", (row.device_index ? std::to_string(*row.device_index) + "  " : std::string()) +
                      row.device_uuid);
    for (const auto& [name, value] : row.extra_metrics)
      line(name.c_str(), format_number(value, 2));
    ImGui::EndTable();
  }
}

void empty_view_message(std::string_view message) {
  const ImVec2 available = ImGui::GetContentRegionAvail();
  const float width = std::min(available.x * 0.8f, 640.0f);
  ImGui::SetCursorPos(ImVec2(ImGui::GetCursorPosX() + (available.x - width) / 2,
                             ImGui::GetCursorPosY() + available.y * 0.3f));
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width);
  ImGui::TextUnformatted(message.data(), message.data() + message.size());
  ImGui::PopTextWrapPos();
}

namespace {

const ImVec4 kCodeColour(0.80f, 0.85f, 0.62f, 1.0f);
const ImVec4 kStrongColour(1.0f, 1.0f, 1.0f, 1.0f);

ImVec4 span_colour(const MarkdownSpan& span, const ImVec4& base) {
  if (span.code) return kCodeColour;
  if (span.strong) return kStrongColour;
  return base;
}

// Word-wrapped text of mixed styles: each word is an item, placed on the current line while it
// fits and on the next one otherwise; a word glued to the previous one (no space between, as in
// "`x`,") stays with it.
void wrapped_line(const MarkdownLine& line, const ImVec4& base) {
  const float available = std::max(ImGui::GetContentRegionAvail().x, 50.0f);
  const float space = ImGui::CalcTextSize(" ").x;
  float x = 0;
  bool first = true;
  bool space_pending = false;
  for (const MarkdownSpan& span : line) {
    const ImVec4 colour = span_colour(span, base);
    std::string_view rest = span.text;
    while (!rest.empty()) {
      if (rest.front() == ' ') {
        space_pending = true;
        rest.remove_prefix(1);
        continue;
      }
      const std::size_t end = std::min(rest.find(' '), rest.size());
      const std::string_view word = rest.substr(0, end);
      rest.remove_prefix(end);
      const float width = ImGui::CalcTextSize(word.data(), word.data() + word.size()).x;
      if (!first) {
        const float gap = space_pending ? space : 0.0f;
        if (x + gap + width > available) {
          x = 0;  // a new line: the next item starts there
        } else {
          ImGui::SameLine(0.0f, gap);
          x += gap;
        }
      }
      ImGui::PushStyleColor(ImGuiCol_Text, colour);
      ImGui::TextUnformatted(word.data(), word.data() + word.size());
      ImGui::PopStyleColor();
      x += width;
      first = false;
      space_pending = false;
    }
  }
}

// One table cell on one line (tables scroll sideways instead of wrapping).
void cell_line(const MarkdownLine& line, bool right_aligned) {
  if (right_aligned) {
    float width = 0;
    for (const MarkdownSpan& span : line)
      width += ImGui::CalcTextSize(span.text.c_str()).x;
    const float shift = ImGui::GetContentRegionAvail().x - width;
    if (shift > 0) ImGui::SetCursorPosX(ImGui::GetCursorPosX() + shift);
  }
  bool first = true;
  for (const MarkdownSpan& span : line) {
    if (!first) ImGui::SameLine(0.0f, 0.0f);
    ImGui::TextColored(span_colour(span, ImGui::GetStyleColorVec4(ImGuiCol_Text)), "%s",
                       span.text.c_str());
    first = false;
  }
}

void markdown_table(const MarkdownBlock& block, int id) {
  std::size_t columns = 0;
  for (const auto& row : block.rows)
    columns = std::max(columns, row.size());
  if (columns == 0) return;
  const ImGuiStyle& style = ImGui::GetStyle();
  // Each column as wide as its widest cell, the header's included; a scroll bar (and the room for
  // it) only when the columns are wider than the page.
  float width = 0;
  for (std::size_t c = 0; c < columns; ++c) {
    float column = 0;
    for (const auto& row : block.rows) {
      if (c >= row.size()) continue;
      float cell = 0;
      for (const MarkdownSpan& span : row[c])
        cell += ImGui::CalcTextSize(span.text.c_str()).x;
      column = std::max(column, cell);
    }
    width += column + 2 * style.CellPadding.x + 1;
  }
  const bool scrolls = width > ImGui::GetContentRegionAvail().x;
  const float row_height = ImGui::GetTextLineHeight() + 2 * style.CellPadding.y;
  const float height = row_height * static_cast<float>(block.rows.size()) + 2 +
                       (scrolls ? style.ScrollbarSize + 4 : 0);
  ImGuiTableFlags flags =
      ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  if (scrolls) flags |= ImGuiTableFlags_ScrollX;
  ImGui::PushID(id);
  if (ImGui::BeginTable("##markdown_table", static_cast<int>(columns), flags,
                        ImVec2(scrolls ? 0 : width + 2, height))) {
    for (std::size_t r = 0; r < block.rows.size(); ++r) {
      // The header row as an ordinary row (ImGui's header flag leaves its text out of the
      // columns' fitted width, which clipped long headers), in the heading colour on its own
      // background.
      ImGui::TableNextRow();
      if (r == 0) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(45, 52, 70, 255));
      for (std::size_t c = 0; c < columns; ++c) {
        ImGui::TableNextColumn();
        if (c >= block.rows[r].size()) continue;
        const bool right = r > 0 && c < block.right_aligned.size() && block.right_aligned[c];
        if (r == 0) ImGui::PushStyleColor(ImGuiCol_Text, kHeadingColour);
        cell_line(block.rows[r][c], right);
        if (r == 0) ImGui::PopStyleColor();
      }
    }
    ImGui::EndTable();
  }
  ImGui::PopID();
}

}  // namespace

void markdown_blocks(const std::vector<MarkdownBlock>& blocks) {
  const ImVec4 text_colour = ImGui::GetStyleColorVec4(ImGuiCol_Text);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const MarkdownBlock& block = blocks[i];
    switch (block.kind) {
      case MarkdownBlockKind::heading:
        ImGui::Spacing();
        wrapped_line(block.text, kHeadingColour);
        if (block.level <= 2) ImGui::Separator();
        break;
      case MarkdownBlockKind::paragraph:
        ImGui::Spacing();
        wrapped_line(block.text, text_colour);
        break;
      case MarkdownBlockKind::list_item:
        ImGui::Indent(static_cast<float>(block.level) * 16.0f);
        ImGui::Bullet();
        ImGui::SameLine();
        ImGui::BeginGroup();
        wrapped_line(block.text, text_colour);
        ImGui::EndGroup();
        ImGui::Unindent(static_cast<float>(block.level) * 16.0f);
        break;
      case MarkdownBlockKind::table:
        ImGui::Spacing();
        markdown_table(block, static_cast<int>(i));
        break;
      case MarkdownBlockKind::code:
        ImGui::Spacing();
        ImGui::Indent();
        for (const std::string& line : block.code_lines)
          ImGui::TextColored(kCodeColour, "%s", line.c_str());
        ImGui::Unindent();
        break;
    }
  }
}

void DiffText::draw(std::string_view diff, const char* id) {
  if (diff.data() != indexed_.data() || diff.size() != indexed_.size()) {
    indexed_ = diff;
    lines_.clear();
    while (!diff.empty()) {
      const std::size_t end = diff.find('\n');
      lines_.push_back(diff.substr(0, end));
      diff.remove_prefix(end == std::string_view::npos ? diff.size() : end + 1);
    }
  }
  ImGui::BeginChild(id, ImVec2(0, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(lines_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const std::string_view line = lines_[static_cast<std::size_t>(i)];
      ImVec4 colour = ImGui::GetStyleColorVec4(ImGuiCol_Text);
      if (line.starts_with("+++") || line.starts_with("---") || line.starts_with("diff "))
        colour = kWarningColour;
      else if (line.starts_with("@@"))
        colour = kHeadingColour;
      else if (line.starts_with("+"))
        colour = kBetterColour;
      else if (line.starts_with("-"))
        colour = kWorseColour;
      ImGui::PushStyleColor(ImGuiCol_Text, colour);
      ImGui::TextUnformatted(line.data(), line.data() + line.size());
      ImGui::PopStyleColor();
    }
  }
  ImGui::EndChild();
}

}  // namespace flashscope::explorer::gui
