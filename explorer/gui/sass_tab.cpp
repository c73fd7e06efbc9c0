#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

#include "explorer/gui/views.hpp"
#include "explorer/sass/sass_selection.hpp"

namespace flashscope::explorer::gui {

namespace {

constexpr std::size_t kHunkBreak = std::numeric_limits<std::size_t>::max();
constexpr int kContextLines = 3;
const ImU32 kLoopBand = IM_COL32(70, 110, 180, 70);
const ImU32 kBeforeBar = IM_COL32(150, 152, 160, 255);
const ImU32 kAfterBar = IM_COL32(240, 170, 60, 255);

std::string hex_address(std::uint32_t address) {
  char text[16];
  std::snprintf(text, sizeof text, "%04x", address);
  return text;
}

std::string kernel_title(const sass::SassKernelRecord& record) {
  return "step " + step_name(record.step) + " " + to_short_form(record.config);
}

bool in_loop(const std::optional<sass::SassLoop>& loop, std::optional<std::size_t> index) {
  return loop && index && *index >= loop->first && *index <= loop->last;
}

// "before -> after" rows of the resources table; `decimals` 0.
void resource_row(const char* label, std::optional<int> before, std::optional<int> after,
                  bool lower_is_better) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(label);
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(before ? std::to_string(*before).c_str() : "-");
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(after ? std::to_string(*after).c_str() : "-");
  ImGui::TableNextColumn();
  if (before && after) {
    const int delta = *after - *before;
    ImVec4 colour = kMutedColour;
    if (delta != 0 && lower_is_better) colour = delta < 0 ? kBetterColour : kWorseColour;
    ImGui::TextColored(colour, "%+d", delta);
  } else {
    ImGui::TextColored(kMutedColour, "-");
  }
}

}  // namespace

std::optional<InstructionFamily> kernel_family(sass::SassLibrary& library, int step,
                                               const std::optional<KernelConfig>& config,
                                               std::optional<DType> dtype) {
  const sass::SassArtifact* artifact = library.artifact();
  if (artifact == nullptr) return std::nullopt;
  bool issues_hmma = false;
  for (const std::string& arch : artifact->architectures()) {
    const auto match = library.kernel_for(step, config, dtype, arch);
    if (!match) continue;
    const sass::OpcodeCounts* counts = library.counts(*match->record, sass::OpcodeGrouping::opcode);
    if (counts == nullptr) continue;
    if (sass::count_of(*counts, "HGMMA") > 0) return InstructionFamily::wgmma;
    if (sass::count_of(*counts, "HMMA") > 0) issues_hmma = true;
  }
  if (issues_hmma) return InstructionFamily::mma_sync;
  return std::nullopt;
}

void SassTab::draw(ExplorerState& state, int step, const Progression& progression) {
  sass::SassLibrary& library = state.sass;
  const sass::SassArtifact* artifact = library.artifact();
  if (artifact == nullptr) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(kWarningColour, "No SASS: %s", library.note().c_str());
    ImGui::TextColored(kMutedColour,
                       "A build finds a CUDA 13 cuobjdump at configure time and records every "
                       "kernel's SASS in <build>/sass; without one the explorer reads the shipped "
                       "results/<gpu>/sass (scripts/gpu_host.sh --stages sass makes it).");
    ImGui::PopTextWrapPos();
    return;
  }

  // Architecture: kept while it has this step, else the one where the step's kernel is largest.
  const std::vector<std::string> arches = artifact->architectures();
  if (std::find(arches.begin(), arches.end(), arch_) == arches.end() ||
      artifact->kernels_of(step, arch_).empty())
    arch_ = sass::default_architecture(*artifact, step);
  if (arch_.empty()) {
    ImGui::TextColored(kWarningColour, "Step %d has no kernel in %s.", step,
                       artifact->directory().string().c_str());
    ImGui::TextColored(kMutedColour, "%s", library.note().c_str());
    return;
  }
  ImGui::SetNextItemWidth(110);
  string_combo("##sass_arch", arch_, arches);
  ImGui::SameLine();
  ImGui::RadioButton("by opcode", &grouping_, 0);
  ImGui::SameLine();
  ImGui::RadioButton("by mnemonic", &grouping_, 1);
  ImGui::SameLine();
  ImGui::Checkbox("changes only", &changes_only_);

  // The kernel: the one the progression measured for this step where the artifact has it.
  if (kernel_step_ != step) {
    kernel_config_.reset();
    kernel_step_ = step;
  }
  std::optional<KernelConfig> measured_config;
  if (const StepValue* value = progression.find_step(step)) measured_config = value->config;
  const auto match = library.kernel_for(step, kernel_config_ ? kernel_config_ : measured_config,
                                        dtype_from_string(state.selection.dtype), arch_);
  if (!match) {
    ImGui::TextColored(kWarningColour, "Step %d has no %s kernel in the SASS artifact.", step,
                       arch_.c_str());
    return;
  }
  const sass::SassKernelRecord& current = *match->record;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-FLT_MIN);
  const std::string current_form = to_short_form(current.config);
  if (ImGui::BeginCombo("##sass_kernel", current_form.c_str())) {
    for (const sass::SassKernelRecord* record : artifact->kernels_of(step, arch_)) {
      const std::string form = to_short_form(record->config);
      if (ImGui::Selectable(form.c_str(), record == &current)) kernel_config_ = record->config;
    }
    ImGui::EndCombo();
  }
  ImGui::TextColored(kMutedColour, "%s", library.note().c_str());
  if (!match->exact && measured_config && !kernel_config_)
    ImGui::TextColored(kWarningColour,
                       "The measured config %s has no SASS in this artifact; showing the step's "
                       "default kernel.",
                       to_short_form(*measured_config).c_str());

  const auto counterpart = sass::previous_step_counterpart(*artifact, current);
  ImGui::TextColored(kHeadingColour, "%s (%s)", kernel_title(current).c_str(), arch_.c_str());
  if (counterpart)
    ImGui::TextColored(kMutedColour, "against %s (%s)", kernel_title(*counterpart->record).c_str(),
                       counterpart->relation.c_str());
  else
    ImGui::TextColored(kMutedColour, "no earlier step has an %s kernel to compare with",
                       arch_.c_str());

  const sass::OpcodeGrouping grouping =
      grouping_ == 0 ? sass::OpcodeGrouping::opcode : sass::OpcodeGrouping::mnemonic;
  const sass::SassComparison* comparison =
      counterpart ? library.compare(*counterpart->record, current, counterpart->relation, grouping)
                  : nullptr;
  const sass::SassKernelRecord* before = counterpart ? counterpart->record : nullptr;

  const ImGuiTableFlags flags =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("##sass_resources", 4, flags)) {
    const std::string before_label = before ? "step " + step_name(before->step) : "-";
    const std::string after_label = "step " + step_name(step);
    ImGui::TableSetupColumn("ptxas / SASS");
    ImGui::TableSetupColumn(before_label.c_str());
    ImGui::TableSetupColumn(after_label.c_str());
    ImGui::TableSetupColumn("change");
    ImGui::TableHeadersRow();
    const auto field = [&](const sass::SassKernelRecord* record,
                           auto member) -> std::optional<int> {
      if (record == nullptr) return std::nullopt;
      return record->*member;
    };
    resource_row("registers", field(before, &sass::SassKernelRecord::registers), current.registers,
                 true);
    resource_row("spill stores (bytes)", field(before, &sass::SassKernelRecord::spill_store_bytes),
                 current.spill_store_bytes, true);
    resource_row("spill loads (bytes)", field(before, &sass::SassKernelRecord::spill_load_bytes),
                 current.spill_load_bytes, true);
    resource_row("stack frame (bytes)", field(before, &sass::SassKernelRecord::stack_frame_bytes),
                 current.stack_frame_bytes, true);
    resource_row("instructions", before ? before->instructions : std::nullopt, current.instructions,
                 true);
    if (comparison) {
      const auto loop_size = [](const std::optional<sass::SassLoop>& loop) -> std::optional<int> {
        if (!loop) return std::nullopt;
        return static_cast<int>(loop->last - loop->first + 1);
      };
      const auto loop_mma = [](const std::optional<sass::SassLoop>& loop) -> std::optional<int> {
        if (!loop) return std::nullopt;
        return loop->tensor_core_instructions;
      };
      resource_row("main loop instructions", loop_size(comparison->loop_before),
                   loop_size(comparison->loop_after), true);
      resource_row("tensor-core in main loop", loop_mma(comparison->loop_before),
                   loop_mma(comparison->loop_after), false);
    }
    ImGui::EndTable();
  }

  if (current.listing.empty()) {
    ImGui::TextColored(kWarningColour, "No listings in this artifact: %s",
                       library.problem(current).c_str());
    return;
  }
  if (comparison == nullptr) {
    const std::string problem = library.problem(current).empty() && before
                                    ? library.problem(*before)
                                    : library.problem(current);
    if (!problem.empty()) ImGui::TextColored(kWorseColour, "%s", problem.c_str());
    return;
  }
  const float width = ImGui::GetContentRegionAvail().x;
  ImGui::BeginChild("##sass_histogram", ImVec2(width * 0.42f, 0), true);
  draw_histogram(*comparison);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##sass_diff_panel", ImVec2(0, 0), false);
  draw_diff(*comparison);
  ImGui::EndChild();
}

void SassTab::draw_histogram(const sass::SassComparison& comparison) {
  ImGui::TextColored(kHeadingColour, "%s histogram, largest change first",
                     comparison.grouping == sass::OpcodeGrouping::opcode ? "Opcode" : "Mnemonic");
  int largest = 1;
  for (const sass::OpcodeChange& change : comparison.changes)
    largest = std::max({largest, change.before, change.after});
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("##sass_changes", 5, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("name");
  const std::string before = "step " + step_name(comparison.before->step);
  const std::string after = "step " + step_name(comparison.after->step);
  ImGui::TableSetupColumn(before.c_str());
  ImGui::TableSetupColumn(after.c_str());
  ImGui::TableSetupColumn("change");
  ImGui::TableSetupColumn("bars", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  const auto row = [&](const char* name, int count_before, int count_after, bool bars) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(name);
    ImGui::TableNextColumn();
    ImGui::Text("%d", count_before);
    ImGui::TableNextColumn();
    ImGui::Text("%d", count_after);
    ImGui::TableNextColumn();
    const int delta = count_after - count_before;
    ImGui::TextColored(delta == 0 ? kMutedColour : (delta < 0 ? kBetterColour : kWorseColour),
                       "%+d", delta);
    ImGui::TableNextColumn();
    if (!bars) return;
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float available = std::max(10.0f, ImGui::GetContentRegionAvail().x);
    const float height = ImGui::GetTextLineHeight();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const float half = height * 0.45f;
    draw->AddRectFilled(
        origin, ImVec2(origin.x + available * count_before / largest, origin.y + half), kBeforeBar);
    draw->AddRectFilled(
        ImVec2(origin.x, origin.y + half + 1),
        ImVec2(origin.x + available * count_after / largest, origin.y + 2 * half + 1), kAfterBar);
    ImGui::Dummy(ImVec2(available, height));
  };
  row("total", comparison.total_before, comparison.total_after, false);
  for (const sass::OpcodeChange& change : comparison.changes)
    row(change.name.c_str(), change.before, change.after, true);
  ImGui::EndTable();
}

void SassTab::draw_diff(const sass::SassComparison& comparison) {
  const auto& lines = comparison.diff.lines;
  if (indexed_ != &comparison || indexed_changes_only_ != changes_only_) {
    indexed_ = &comparison;
    indexed_changes_only_ = changes_only_;
    visible_.clear();
    std::vector<bool> shown(lines.size(), !changes_only_);
    if (changes_only_)
      for (std::size_t i = 0; i < lines.size(); ++i)
        if (lines[i].kind != sass::DiffKind::same) {
          const std::size_t from = i >= kContextLines ? i - kContextLines : 0;
          const std::size_t to = std::min(lines.size() - 1, i + kContextLines);
          for (std::size_t j = from; j <= to; ++j)
            shown[j] = true;
        }
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (!shown[i]) continue;
      if (!visible_.empty() && visible_.back() != kHunkBreak && visible_.back() + 1 != i)
        visible_.push_back(kHunkBreak);
      visible_.push_back(i);
    }
  }
  ImGui::TextColored(kHeadingColour, "Disassembly diff: %zu removed, %zu added",
                     comparison.diff.removed, comparison.diff.added);
  ImGui::SameLine();
  ImGui::TextColored(
      kMutedColour, "(register numbers, .reuse and branch targets stripped; blue band: main loop)");
  if (comparison.diff.truncated)
    ImGui::TextColored(kWarningColour,
                       "The listings differ too much for a minimal diff: every differing line is "
                       "shown as removed, then added.");
  ImGui::BeginChild("##sass_diff", ImVec2(0, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
  if (visible_.empty()) ImGui::TextColored(kMutedColour, "The normalized listings are identical.");
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(visible_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const std::size_t index = visible_[static_cast<std::size_t>(i)];
      if (index == kHunkBreak) {
        ImGui::TextColored(kMutedColour, "   ...");
        continue;
      }
      const sass::DiffLine& line = lines[index];
      const bool removed = line.kind == sass::DiffKind::removed;
      const bool loop = removed ? in_loop(comparison.loop_before, line.before)
                                : in_loop(comparison.loop_after, line.after);
      const std::uint32_t address =
          removed ? comparison.function_before->instructions[*line.before].address
                  : comparison.function_after->instructions[*line.after].address;
      const std::string& text =
          removed ? comparison.lines_before[*line.before] : comparison.lines_after[*line.after];
      if (loop) {
        const ImVec2 origin = ImGui::GetCursorScreenPos();
        ImGui::GetWindowDrawList()->AddRectFilled(
            origin,
            ImVec2(origin.x + ImGui::GetContentRegionAvail().x,
                   origin.y + ImGui::GetTextLineHeight()),
            kLoopBand);
      }
      const char sign = removed ? '-' : line.kind == sass::DiffKind::added ? '+' : ' ';
      const ImVec4 colour = removed ? kWorseColour
                            : line.kind == sass::DiffKind::added
                                ? kBetterColour
                                : ImGui::GetStyleColorVec4(ImGuiCol_Text);
      ImGui::TextColored(colour, "%c /*%s*/ %s", sign, hex_address(address).c_str(), text.c_str());
    }
  }
  ImGui::EndChild();
}

}  // namespace flashscope::explorer::gui
