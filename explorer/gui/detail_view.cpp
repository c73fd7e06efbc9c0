#include <algorithm>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "configs/config_sets.hpp"
#include "explorer/gui/views.hpp"
#include "explorer/model/ceilings.hpp"
#include "explorer/model/roofline.hpp"
#include "explorer/model/step_pages.hpp"
#include "explorer/model/steps.hpp"

namespace flashscope::explorer::gui {

namespace {

// Whether a rise in the field is an improvement (true), a regression (false) or neither.
std::optional<bool> higher_is_better(Field field) {
  switch (field) {
    case Field::tflops:
    case Field::pct_fa2:
    case Field::pct_cudnn:
    case Field::pct_fa2_cycles:
    case Field::pct_cudnn_cycles:
      return true;
    case Field::median_ms:
    case Field::cycles:
    case Field::local_bytes:
      return false;
    case Field::tensor_pipe_pct:
      return true;
    default:
      return std::nullopt;  // registers, shared memory, L2 hit: context decides
  }
}

int decimals_of(Field field) {
  switch (field) {
    case Field::median_ms:
      return 3;
    case Field::tflops:
    case Field::pct_fa2:
    case Field::pct_cudnn:
    case Field::pct_fa2_cycles:
    case Field::pct_cudnn_cycles:
    case Field::l2_hit_pct:
      return 1;
    default:
      return 0;
  }
}

void feature_list(const char* caption, const std::vector<std::string>& features, ImVec4 colour) {
  if (features.empty()) return;
  std::string text;
  for (const std::string& feature : features)
    text += (text.empty() ? "" : ", ") + feature;
  ImGui::TextColored(colour, "%s %s", caption, text.c_str());
}

}  // namespace

const std::vector<MarkdownBlock>& DetailView::page_blocks(const StepPage& page) {
  if (parsed_page_ != &page) {  // parsed once per page shown, not per frame
    parsed_page_ = &page;
    page_blocks_ = parse_markdown(page.doc_markdown);
  }
  return page_blocks_;
}

void DetailView::draw(ExplorerState& state) {
  int& step = state.selection.detail_step;
  // Every step the build knows, forward then backward, the Hopper track included: a step without
  // an embedded page still has its metrics and SASS.
  const std::span<const StepDescriptor> steps = configs::step_descriptors();
  auto current = std::find_if(steps.begin(), steps.end(),
                              [step](const StepDescriptor& known) { return known.number == step; });
  if (current == steps.end()) current = steps.begin();
  const auto label = [](const StepDescriptor& known) {
    return "step " + step_name(known.number) + ": " + std::string(known.title);
  };
  auto chosen = current;
  if (ImGui::ArrowButton("##previous_step", ImGuiDir_Left) && chosen != steps.begin()) --chosen;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(420);
  if (ImGui::BeginCombo("##detail_step", label(*current).c_str())) {
    for (auto candidate = steps.begin(); candidate != steps.end(); ++candidate)
      if (ImGui::Selectable(label(*candidate).c_str(), candidate == current)) chosen = candidate;
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next_step", ImGuiDir_Right) && std::next(chosen) != steps.end())
    ++chosen;
  step = chosen->number;
  // A step of the other pass is measured in the other pass's workload: the metrics and the
  // comparison with the previous step follow it there, where the loaded files have it.
  const auto shown_pass = state.filter().workload.find(Axis::pass);
  const int pass = static_cast<int>(chosen->pass);
  if (chosen != current && shown_pass != state.filter().workload.end() &&
      shown_pass->second != pass) {
    const std::vector<int> passes = state.workload_values(Axis::pass);
    if (std::find(passes.begin(), passes.end(), pass) != passes.end())
      state.requested_workload_value = {Axis::pass, pass};
  }
  // The shared selection (dtype, d_head, workload, N, show) on a line of its own, as in the
  // progression view: beside the step chooser it ran off a 1600-pixel window.
  selection_controls(state);

  const Progression& progression = cache_.get(state);
  draw_changes(state, progression, step);

  const StepPage* page = embedded_step_page(step);
  const auto tab_flags = [this](Tab tab) {
    return requested_tab_ == tab ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None;
  };
  if (!ImGui::BeginTabBar("##detail_tabs")) return;
  if (page != nullptr) {  // steps without an embedded page still have their SASS
    const std::string doc_tab = "Documentation (" + std::string(page->doc_path) + ")";
    if (ImGui::BeginTabItem(doc_tab.c_str(), nullptr, tab_flags(Tab::documentation))) {
      ImGui::BeginChild("##doc", ImVec2(0, 0), true);
      if (page->doc_markdown.empty())
        ImGui::TextColored(kMutedColour, "%.*s did not exist when this explorer was built.",
                           static_cast<int>(page->doc_path.size()), page->doc_path.data());
      else
        markdown_blocks(page_blocks(*page));
      ImGui::EndChild();
      ImGui::EndTabItem();
    }
    if (ImGui::BeginTabItem("Source diff vs previous step", nullptr, tab_flags(Tab::source_diff))) {
      ImGui::TextColored(kMutedColour, "%.*s", static_cast<int>(page->diff_summary.size()),
                         page->diff_summary.data());
      if (!page->source_diff.empty()) diff_text_.draw(page->source_diff, "##diff");
      ImGui::EndTabItem();
    }
  }
  if (ImGui::BeginTabItem("SASS", nullptr, tab_flags(Tab::sass))) {
    sass_tab_.draw(state, step, progression);
    ImGui::EndTabItem();
  }
  requested_tab_.reset();
  ImGui::EndTabBar();
}

void DetailView::draw_changes(ExplorerState& state, const Progression& progression, int step) {
  const RowSet& set = state.rows();
  const StepChange change =
      change_from_previous_step(progression, step, set, state.selection.baseline);
  if (change.current == nullptr) {
    // The rows shown are one run's unless the user chose every run; a step measured in another
    // run (a newer step's own sweep) is there, not missing.
    const char* where =
        state.filter().run.empty() ? "" : " in the run shown (Rows shown: its run or every run)";
    ImGui::TextColored(kWarningColour,
                       "Step %s has no usable rows for %s at this N%s: nothing to compare.",
                       step_name(step).c_str(), state.selection.dtype.c_str(), where);
    ImGui::Separator();
    return;
  }
  const std::string previous_name =
      change.previous ? change.previous->subject.label() : std::string("(none)");
  ImGui::TextColored(kHeadingColour, "What step %s changed against %s", step_name(step).c_str(),
                     previous_name.c_str());
  if (change.previous) {
    const ConfigChange config =
        describe_config_change(*change.previous->config, *change.current->config);
    if (config.identical()) {
      ImGui::TextColored(kMutedColour, "same kernel configuration: %s",
                         change.current->config_text().c_str());
    } else {
      ImGui::TextColored(kMutedColour, "config %s -> %s", change.previous->config_text().c_str(),
                         change.current->config_text().c_str());
      if (!config.current_shape.empty())
        ImGui::TextColored(kWarningColour, "shape %s -> %s", config.previous_shape.c_str(),
                           config.current_shape.c_str());
      feature_list("adds", config.added_features, kBetterColour);
      feature_list("drops", config.removed_features, kWorseColour);
    }
  } else {
    ImGui::TextColored(kMutedColour, "config %s", change.current->config_text().c_str());
  }

  const bool harmonic_mean = !state.selection.seq_len.has_value();
  const ImGuiTableFlags flags =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("##step_changes", 5, flags)) {
    ImGui::TableSetupColumn(harmonic_mean ? "metric (mean over N)" : "metric");
    ImGui::TableSetupColumn(previous_name.c_str());
    ImGui::TableSetupColumn(change.current->subject.label().c_str());
    ImGui::TableSetupColumn("change");
    ImGui::TableSetupColumn("relative");
    ImGui::TableHeadersRow();
    for (const MetricChange& metric : change.changes) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(std::string(field_label(metric.field)).c_str());
      const int decimals = decimals_of(metric.field);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(metric.previous, decimals).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_number(metric.current, decimals).c_str());
      const auto relative = metric.relative_change();
      ImVec4 colour = kMutedColour;
      if (const auto better = higher_is_better(metric.field); better && relative && *relative != 0)
        colour = (*relative > 0) == *better ? kBetterColour : kWorseColour;
      ImGui::TableNextColumn();
      if (metric.previous && metric.current) {
        const std::string delta = format_number(*metric.current - *metric.previous, decimals);
        ImGui::TextColored(colour, "%s%s", *metric.current >= *metric.previous ? "+" : "",
                           delta.c_str());
      } else {
        ImGui::TextColored(kMutedColour, "-");
      }
      ImGui::TableNextColumn();
      if (relative)
        ImGui::TextColored(colour, "%+.1f%%", *relative * 100.0);
      else
        ImGui::TextColored(kMutedColour, "-");
    }
    ImGui::EndTable();
  }
  draw_ceiling_shares(state, change.previous, *change.current);
  ImGui::Separator();
}

// Which bound the step is near: its shares of the device's ceilings (`explorer peak` rows) beside
// the previous step's: the tensor pipe of its own family, the softmax's exponentials against the
// MUFU (ex2.f32), and HBM and shared memory where the row has DRAM byte and shared-memory
// wavefront counts.
void DetailView::draw_ceiling_shares(ExplorerState& state, const StepValue* previous,
                                     const StepValue& current) {
  const Ceilings ceilings(state.rows().ceiling_rows());
  if (ceilings.empty()) {
    ImGui::TextColored(kMutedColour,
                       "Shares of the device's ceilings: none loaded (explorer peak writes them).");
    return;
  }
  const auto shares = [&](const StepValue& value) {
    std::string text;
    if (const auto tensor = value_share(state, ceilings, value))
      text += format_number(tensor->percent, 1) + " % of " +
              std::string(family_name(tensor->ceiling->family));
    else
      text += "- of the tensor pipe";
    const ResultRow& row = *value.rows.front();
    if (const auto ex2 = ex2_share_percent(ceilings, row, value.tflops))
      text += ", " + format_number(*ex2, 1) + " % of ex2";
    // DRAM bytes are counted at some N only (the shipped progression: 4096): the first row with
    // them, at its own N. TFLOP/s / (FLOP per byte) is the bytes per second it moved.
    const MemoryCeiling* hbm = ceilings.best_memory(row.device);
    for (const ResultRow* measured : value.rows) {
      const auto intensity = arithmetic_intensity(*measured);
      if (!hbm || !intensity || !(*intensity > 0)) continue;
      text += ", " +
              format_number(measured->tflops * 1e3 / *intensity / hbm->gbytes_per_s * 100.0, 1) +
              " % of " + hbm->name + " (N = " + std::to_string(measured->problem.seq_len) + ")";
      break;
    }
    // Shared-memory wavefronts are counted where a run asked CUPTI for them (the shipped
    // progression-4096-smem.csv): the first row with them, at its own N, from this run or else
    // from another that measured the same kernel.
    const ResultRow* counted = nullptr;
    for (const ResultRow* measured : value.rows)
      if (!counted && smem_share_percent(ceilings, *measured)) counted = measured;
    if (!counted) counted = smem_counted_row(ceilings, state.rows().rows(), row);
    if (counted)
      text += ", " + format_number(*smem_share_percent(ceilings, *counted), 1) +
              " % of smem.read (N = " + std::to_string(counted->problem.seq_len) +
              (counted->run_id == row.run_id ? std::string() : ", run " + run_label(*counted)) +
              ")";
    return text;
  };
  if (current.rows.empty()) return;
  ImGui::TextColored(kMutedColour, "Shares of the device's ceilings: %s", shares(current).c_str());
  if (previous && !previous->rows.empty())
    ImGui::TextColored(kMutedColour, "  %s: %s", previous->subject.label().c_str(),
                       shares(*previous).c_str());
}

}  // namespace flashscope::explorer::gui
