#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "explorer/gui/views.hpp"
#include "explorer/model/hints.hpp"
#include "explorer/model/roofline.hpp"
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

const ImU32 kMmaSyncCeilingColour = IM_COL32(190, 130, 255, 255);
const ImU32 kWgmmaCeilingColour = IM_COL32(255, 100, 170, 255);

ImU32 ceiling_colour(InstructionFamily family) {
  return family == InstructionFamily::mma_sync ? kMmaSyncCeilingColour : kWgmmaCeilingColour;
}

// From dim blue-grey (none) to bright orange (the most of the chosen opcode).
ImU32 count_colour(double fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const auto mix = [&](int from, int to) {
    return static_cast<int>(from + (to - from) * fraction);
  };
  return IM_COL32(mix(70, 250), mix(80, 160), mix(100, 40), 235);
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
  const int step = value.subject.step().value_or(0);
  const std::string_view title = step_title(step);
  if (!title.empty())
    ImGui::TextColored(kHeadingColour, "%.*s", static_cast<int>(title.size()), title.data());
  if (harmonic_mean) {
    ImGui::TextColored(kHeadingColour, "%s", value.subject.label().c_str());
    ImGui::Text("%s", value.config_text().c_str());
    ImGui::Text("harmonic mean %.1f TFLOP/s over %zu of %zu N", value.tflops, value.rows.size(),
                progression.seq_lens.size());
    if (ImGui::BeginTable("##per_n", 8, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg)) {
      for (const char* header : {"N", "TFLOP/s", "median ms", "registers", "L2 hit %", "cycles",
                                 "tensor pipe %", "GPU state"})
        ImGui::TableSetupColumn(header);
      ImGui::TableHeadersRow();
      for (const ResultRow* row : value.rows) {
        ImGui::TableNextRow();
        for (Field field : {Field::seq_len, Field::tflops, Field::median_ms, Field::registers,
                            Field::l2_hit_pct, Field::cycles, Field::tensor_pipe_pct}) {
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(format_field(set, *row, field).c_str());
        }
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(clock_summary(*row).c_str());
      }
      ImGui::EndTable();
    }
  } else if (!value.rows.empty()) {
    row_details(set, *value.rows.front());
  }
  if (value.subject.is_kernel()) ImGui::TextColored(kMutedColour, "click: open step detail");
  ImGui::EndTooltip();
}

}  // namespace

// The step's value as a share of its instruction family's ceiling (the family from its SASS).
std::optional<CeilingShare> value_share(ExplorerState& state, const Ceilings& ceilings,
                                        const StepValue& value) {
  if (value.rows.empty() || ceilings.empty()) return std::nullopt;
  ResultRow row = *value.rows.front();
  row.tflops = value.tflops;  // the harmonic mean where the value is one
  std::optional<InstructionFamily> family;
  if (const auto step = row.step_number())
    family = kernel_family(state.sass, *step, value.config, row_dtype(row));
  return share_of_ceiling(ceilings, row, family);
}

const Progression& ProgressionCache::get(ExplorerState& state) {
  const Selection& selection = state.selection;
  const ProgressionQuery query{selection.dtype, selection.seq_len, selection.baseline};
  if (generation_ != state.generation() || !(query == query_)) {
    if (rows_ == Rows::with_dram) {
      dram_rows_ = rows_with_dram(state.rows());
      progression_ = build_progression(dram_rows_, query);
    } else {
      progression_ = build_progression(state.rows(), query);
    }
    generation_ = state.generation();
    query_ = query;
  }
  return progression_;
}

void ProgressionView::sass_controls(ExplorerState& state) {
  sass::SassLibrary& library = state.sass;
  if (!library.has_listings()) {
    ImGui::TextColored(kMutedColour, "(no SASS listings to annotate the bars with)");
    return;
  }
  const std::vector<std::string> arches = library.artifact()->architectures();
  if (std::find(arches.begin(), arches.end(), sass_arch_) == arches.end())
    sass_arch_ = arches.back();  // the newest architecture: the one the Hopper steps exist on
  ImGui::TextUnformatted("SASS opcode");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(150);
  const char* none = "(none)";
  if (ImGui::BeginCombo("##sass_opcode", sass_opcode_.empty() ? none : sass_opcode_.c_str())) {
    if (sass_opcodes_arch_ != sass_arch_) {
      sass_opcodes_ = library.names(sass_arch_, sass::OpcodeGrouping::opcode);
      sass_opcodes_arch_ = sass_arch_;
    }
    if (ImGui::Selectable(none, sass_opcode_.empty())) sass_opcode_.clear();
    for (const std::string& name : sass_opcodes_)
      if (ImGui::Selectable(name.c_str(), name == sass_opcode_)) sass_opcode_ = name;
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  string_combo("##sass_opcode_arch", sass_arch_, arches);
}

void ProgressionView::draw(ExplorerState& state) {
  selection_controls(state);
  const Selection& selection = state.selection;
  const Progression& progression = cache_.get(state);
  const RowSet& set = state.rows();
  const bool harmonic_mean = !selection.seq_len.has_value();
  const ValueMode mode = selection.mode;
  const Ceilings ceilings(set.ceiling_rows());

  ImGui::Checkbox("device ceilings", &show_ceilings_);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Reference lines at the mma.sync and wgmma ceilings `explorer peak` measured "
        "(TFLOP/s mode), and each step's %% of its own family's ceiling in the table");
  ImGui::SameLine();
  ImGui::TextUnformatted("   ");
  ImGui::SameLine();
  sass_controls(state);
  if (show_ceilings_ && ceilings.compute().empty()) {
    ImGui::SameLine();
    ImGui::TextColored(kMutedColour, "(no ceilings loaded: %s writes them)",
                       std::string(hints::kPeakToFile).c_str());
  }
  std::vector<const ComputeCeiling*> shown_ceilings;
  if (show_ceilings_ && mode == ValueMode::tflops) {
    const std::string device = progression.steps.empty() || progression.steps.front().rows.empty()
                                   ? std::string()
                                   : progression.steps.front().rows.front()->device;
    for (const ComputeCeiling& ceiling : ceilings.compute())
      if (ceiling.dtype == selection.dtype && (device.empty() || ceiling.device == device))
        shown_ceilings.push_back(&ceiling);
  }

  ImGui::TextColored(kMutedColour, "%s, %s: %s", selection.dtype.c_str(),
                     describe_seq_lens(progression, harmonic_mean).c_str(),
                     harmonic_mean ? "one config per step (the one measured at the most N)"
                                   : "each step's fastest config");
  if (progression.steps.empty() && progression.baselines.empty()) {
    empty_view_message(
        "No usable rows for this dtype and N. Pick another dtype or N above, or enable more "
        "files on the left.");
    return;
  }

  std::vector<double> values;
  for (const auto* group : {&progression.steps, &progression.baselines})
    for (const StepValue& value : *group)
      if (const auto shown = shown_value(value, mode, selection.basis)) values.push_back(*shown);
  for (const ComputeCeiling* ceiling : shown_ceilings)
    values.push_back(ceiling->tflops);

  // The chosen opcode's static count in each step's kernel (its measured config where the SASS
  // artifact has it, else the step's default kernel: marked "~").
  struct Annotation {
    int count = 0;
    bool exact = true;
  };
  std::map<int, Annotation> annotations;
  int most = 0;
  if (!sass_opcode_.empty() && state.sass.has_listings()) {
    for (const StepValue& value : progression.steps) {
      const int step = value.subject.step().value_or(0);
      const auto match =
          state.sass.kernel_for(step, value.config, dtype_from_string(selection.dtype), sass_arch_);
      if (!match) continue;
      const sass::OpcodeCounts* counts =
          state.sass.counts(*match->record, sass::OpcodeGrouping::opcode);
      if (counts == nullptr) continue;
      annotations[step] = {sass::count_of(*counts, sass_opcode_), match->exact};
      most = std::max(most, annotations[step].count);
    }
  }

  plot::Axis x_axis;
  x_axis.title = "step";
  x_axis.fit = {0.4, configs::kLastStep + 0.6};
  x_axis.zoomable = false;
  for (int step = 1; step <= configs::kLastStep; ++step)
    x_axis.categories.push_back({static_cast<double>(step), std::to_string(step)});
  plot::Axis y_axis;
  y_axis.title = mode == ValueMode::tflops
                     ? "TFLOP/s"
                     : "% of " + std::string(baseline_label(selection.baseline)) + " " +
                           std::string(percent_basis_label(selection.basis));
  y_axis.fit = plot::fit_range(values, plot::AxisScale::linear, 0.12, true);
  y_axis.zoomable = false;

  // The ceilings and references as horizontal lines, named in a column right of the bars so that
  // no name covers a bar; the bars' values are lifted above any line (plot.hpp).
  struct LevelLine {
    double value;
    ImU32 colour;
    std::string label;
  };
  std::vector<LevelLine> levels;
  for (const ComputeCeiling* ceiling : shown_ceilings) {
    char label[96];
    std::snprintf(label, sizeof label, "%s ceiling %.0f",
                  std::string(family_name(ceiling->family)).c_str(), ceiling->tflops);
    levels.push_back({ceiling->tflops, ceiling_colour(ceiling->family), label});
  }
  for (const StepValue& value : progression.baselines) {
    const auto shown = shown_value(value, mode, selection.basis);
    const auto baseline = value.subject.which_baseline();
    if (shown && baseline)
      levels.push_back({*shown, baseline_colour(*baseline),
                        std::string(baseline_label(*baseline)) + " " + format_value(*shown, mode)});
  }
  float label_column = 0;
  for (const LevelLine& level : levels)
    label_column = std::max(label_column, ImGui::CalcTextSize(level.label.c_str()).x + 8);

  const float table_height = std::max(ImGui::GetContentRegionAvail().y * 0.36f, 120.0f);
  plot::Plot chart("##progression", ImVec2(0, -table_height), x_axis, y_axis, {label_column, {}});
  int missing_percent = 0;
  int held_down_bars = 0;
  for (std::size_t i = 0; i < progression.steps.size(); ++i) {
    const StepValue& value = progression.steps[i];
    const int step = value.subject.step().value_or(0);
    const auto shown = shown_value(value, mode, selection.basis);
    if (!shown) {
      ++missing_percent;
      continue;
    }
    const bool hovered = hovered_step_ == step;
    const auto annotation = annotations.find(step);
    const ImU32 colour = sass_opcode_.empty() || annotation == annotations.end()
                             ? step_colour(step, hovered ? 1.0f : 0.85f)
                             : count_colour(most > 0 ? double(annotation->second.count) / most : 0);
    chart.bar(step, 0.7, *shown, colour, static_cast<int>(i));
    // A bar whose rows ran with the clock held down (power cap, heat) is marked, so a reader
    // does not take a throttled figure for the kernel's best; the tooltip gives the clock.
    const bool held_down = std::any_of(value.rows.begin(), value.rows.end(), [](const auto* row) {
      return !clock_held_by(*row).empty();
    });
    held_down_bars += held_down ? 1 : 0;
    chart.text_above(step, *shown, format_value(*shown, mode) + (held_down ? "*" : ""),
                     held_down ? IM_COL32(240, 200, 120, 255) : IM_COL32(220, 222, 228, 255));
    if (!sass_opcode_.empty()) {
      const std::string count =
          annotation == annotations.end()
              ? "-"
              : (annotation->second.exact ? "" : "~") + std::to_string(annotation->second.count);
      chart.text_above(step, *shown * 0.04, count, IM_COL32(255, 255, 255, 255));
    }
  }
  for (const LevelLine& level : levels)
    chart.horizontal_line(level.value, level.colour, level.label);
  // Steps 17+ are the Hopper track: wgmma, TMA and warp specialization on sm_90a, after the
  // seed's sixteen Ampere-instruction steps.
  chart.vertical_separator(kFirstHopperStep - 0.5, IM_COL32(150, 160, 190, 200),
                           "Hopper track (sm_90a)");
  const plot::Interaction interaction = chart.finish();
  hovered_step_.reset();
  if (interaction.hovered) {
    const StepValue& value = progression.steps[static_cast<std::size_t>(*interaction.hovered)];
    hovered_step_ = value.subject.step().value_or(0);
    step_value_tooltip(set, value, progression, harmonic_mean);
  }
  if (interaction.clicked) {
    state.selection.detail_step =
        progression.steps[static_cast<std::size_t>(*interaction.clicked)].subject.step().value_or(
            0);
    state.requested_view = ViewId::detail;
  }
  if (!sass_opcode_.empty())
    ImGui::TextColored(kMutedColour,
                       "Bar colour and the number at its foot: static %s count in the step's %s "
                       "kernel (~: the measured config has no SASS; the step's default kernel)",
                       sass_opcode_.c_str(), sass_arch_.c_str());
  if (held_down_bars > 0)
    ImGui::TextColored(kMutedColour,
                       "*: %d bar(s) measured while the GPU held its clock down (power cap or "
                       "heat, NVML); hover a bar for its clock, power and temperature",
                       held_down_bars);
  if (missing_percent > 0)
    ImGui::TextColored(kWarningColour,
                       selection.basis == PercentBasis::cycles
                           ? "%d step(s) have no %s row with cycles at the same shape in the same "
                             "run (counters off?), so no percentage by cycles."
                           : "%d step(s) have no %s row at the same shape in the same run, so no "
                             "percentage.",
                       missing_percent, std::string(baseline_label(selection.baseline)).c_str());

  // The same numbers as a table, with each step's change over the one before it.
  const ImGuiTableFlags flags = ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  const auto share_cell = [&](const StepValue& value) {
    const auto share = value_share(state, ceilings, value);
    if (!share) {
      ImGui::TextColored(kMutedColour, "-");
      return;
    }
    ImGui::Text("%.1f%% %s", share->percent,
                std::string(family_name(share->ceiling->family)).c_str());
  };
  // The softmax's exponentials against the MUFU ceiling (peak:ex2.f32), the other bound of
  // attention besides the tensor pipe and HBM.
  const auto ex2_cell = [&](const StepValue& value) {
    const auto share = value.rows.empty()
                           ? std::nullopt
                           : ex2_share_percent(ceilings, *value.rows.front(), value.tflops);
    if (!share)
      ImGui::TextColored(kMutedColour, "-");
    else
      ImGui::Text("%.1f%%", *share);
  };
  // The shared-memory data stage against the smem.read ceiling, where a row of the step counted
  // its wavefronts (CUPTI; the shipped progression-4096 files do, at N = 4096).
  // A run without the count (most runs) borrows it from a run that measured the same kernel.
  const auto smem_cell = [&](const StepValue& value) {
    const ResultRow* counted = nullptr;
    for (const ResultRow* row : value.rows)
      if (!counted && smem_share_percent(ceilings, *row)) counted = row;
    if (!counted && !value.rows.empty())
      counted = smem_counted_row(ceilings, state.rows().rows(), *value.rows.front());
    if (!counted) {
      ImGui::TextColored(kMutedColour, "-");
      return;
    }
    ImGui::Text("%.1f%%", *smem_share_percent(ceilings, *counted));
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s at N = %d (run %s) over the smem.read ceiling (128 B per wavefront)",
                        kSharedWavefrontsMetric, counted->problem.seq_len,
                        run_label(*counted).c_str());
  };
  if (ImGui::BeginTable("##progression_table", 10, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    // The numbers keep their width; the iteration's title and the config share the rest and
    // wrap onto a second line where the window is narrow, so neither is cut off.
    ImGui::TableSetupColumn("step");
    ImGui::TableSetupColumn("iteration", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableSetupColumn("TFLOP/s");
    const std::string baseline_name(baseline_label(selection.baseline));
    const std::string percent_header = "% of " + baseline_name + " by time";
    const std::string cycles_header = "by cycles";
    ImGui::TableSetupColumn(percent_header.c_str());
    ImGui::TableSetupColumn(cycles_header.c_str());
    ImGui::TableSetupColumn("% of ceiling");
    ImGui::TableSetupColumn("% of ex2");
    ImGui::TableSetupColumn("% of SMEM");
    ImGui::TableSetupColumn("vs previous step");
    ImGui::TableSetupColumn("config", ImGuiTableColumnFlags_WidthStretch, 1.7f);
    ImGui::TableHeadersRow();
    const StepValue* previous = nullptr;
    for (const StepValue& value : progression.steps) {
      const int step = value.subject.step().value_or(0);
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
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextUnformatted(step_title(step).data(),
                             step_title(step).data() + step_title(step).size());
      ImGui::PopTextWrapPos();
      ImGui::TableNextColumn();
      ImGui::Text("%.1f", value.tflops);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(value.percent, 1).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(value.percent_cycles, 1).c_str());
      ImGui::TableNextColumn();
      share_cell(value);
      ImGui::TableNextColumn();
      ex2_cell(value);
      ImGui::TableNextColumn();
      smem_cell(value);
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
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextUnformatted(value.config_text().c_str());
      ImGui::PopTextWrapPos();
      previous = &value;
    }
    for (const StepValue& value : progression.baselines) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(value.subject.label().c_str());
      ImGui::TableNextColumn();
      ImGui::TextColored(kMutedColour, "reference");
      ImGui::TableNextColumn();
      ImGui::Text("%.1f", value.tflops);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(value.percent, 1).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(value.percent_cycles, 1).c_str());
      ImGui::TableNextColumn();
      share_cell(value);
      ImGui::TableNextColumn();
      ex2_cell(value);
      ImGui::TableNextColumn();
      smem_cell(value);
      ImGui::TableNextColumn();
      ImGui::TableNextColumn();
    }
    ImGui::EndTable();
  }
}

}  // namespace flashscope::explorer::gui
