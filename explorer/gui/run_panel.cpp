#include <imgui.h>
#include <imgui_stdlib.h>  // after imgui.h, which it needs

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "configs/config_sets.hpp"
#include "explorer/gui/views.hpp"
#include "kernels/common/problem_axes.hpp"
#include "kernels/common/text.hpp"

namespace flashscope::explorer::gui {

namespace {

// Selection keys of spec §5.4, and `built`; the last entry takes a "B_r,B_c" text. How many kernels
// each yields per step is not written here: the panel shows the sweep plan's count per step.
constexpr const char* kConfigSets[] = {"prog", "prog_all", "tune", "all", "built", "B_r,B_c"};
constexpr const char* kConfigSetHelp[] = {
    "each step's progression config and its picks",
    "extended progression (an Ampere step: 8 block shapes per entry; a Hopper step: its tune set)",
    "the auto-tune search space (a Hopper step: its own tune set)",
    "the seed's build list (a Hopper step: its tune set)",
    "every kernel built into this binary",
    "auto-tune configs with this block shape",
};
constexpr int kStepsPerRow = 4;

// What the panel starts with ticked: one quick problem (fp16, N = 4096) of each axis' default.
std::vector<int> panel_default(const AxisSpec& spec) {
  if (spec.axis == Axis::seq_len) return {4096};
  if (spec.axis == Axis::dtype) return {static_cast<int>(DType::FP16)};
  return spec.sweep_default != nullptr ? spec.sweep_default() : std::vector<int>{};
}

}  // namespace

RunPanel::RunPanel(std::shared_ptr<SweepPlanner> planner, std::shared_ptr<SweepRunner> runner,
                   std::string unavailable_reason)
    : planner_(std::move(planner)),
      runner_(std::move(runner)),
      unavailable_reason_(std::move(unavailable_reason)) {
  if (runner_) session_ = std::make_unique<SweepSession>(runner_);
  if (planner_) {
    tracks_ = group_by_track(planner_->steps());
    for (const StepTrack& track : tracks_)
      for (const RunnableStep& step : track.steps)
        steps_[step.step] = true;
  }
  // One chooser per problem axis: its suggested values, the panel's defaults ticked.
  for (const AxisSpec& spec : problem_axes()) {
    AxisChoice& choice = axes_[spec.axis];
    const std::vector<int> ticked = panel_default(spec);
    for (const int value : spec.suggested())
      choice.values.emplace_back(value,
                                 std::find(ticked.begin(), ticked.end(), value) != ticked.end());
  }
}

bool RunPanel::busy() const {
  return session_ && session_->busy();
}

void RunPanel::stream_rows(ExplorerState& state) {
  if (session_) state.append_live_rows(session_->take_rows());
}

std::vector<int> RunPanel::choose_steps(const std::vector<int>& steps) {
  std::vector<int> missing;
  for (auto& [step, ticked] : steps_)
    ticked = false;
  for (const int step : steps) {
    const auto found = steps_.find(step);
    if (found == steps_.end())
      missing.push_back(step);
    else
      found->second = true;
  }
  return missing;
}

SweepRequest RunPanel::request() const {
  SweepRequest request;
  request.config_set =
      config_set_ == IM_ARRAYSIZE(kConfigSets) - 1 ? custom_shape_ : kConfigSets[config_set_];
  for (const auto& [step, ticked] : steps_)
    if (ticked) request.steps.push_back(step);
  // An axis with no value ticked is derived where it can be (batch from N, heads_kv = heads),
  // else left empty, which the preview names.
  for (const auto& [axis, choice] : axes_) {
    std::vector<int> values;
    for (const auto& [value, ticked] : choice.values)
      if (ticked) values.push_back(value);
    if (!values.empty() || axis_spec(axis).derived == nullptr) request.axes[axis] = values;
  }
  request.include_baselines = baselines_;
  return request;
}

// Plans are pure functions of the request and the build: re-planned only when the request changes.
void RunPanel::refresh_preview() {
  const SweepRequest wanted = request();
  if (previewed_ == wanted) return;
  previewed_ = wanted;
  SweepRequest every_step = wanted;
  every_step.steps.clear();
  for (const auto& [step, ticked] : steps_)
    every_step.steps.push_back(step);
  every_step.include_baselines = false;
  std::vector<std::string> unchosen;
  for (auto& [axis, values] : every_step.axes)
    if (values.empty()) {
      values = panel_default(axis_spec(axis));
      unchosen.emplace_back(axis_spec(axis).label);
    }
  every_step_ = planner_->preview(every_step);
  chosen_ =
      wanted.steps.empty() || !unchosen.empty()
          ? SweepPreview{{},
                         0,
                         {},
                         "choose at least one step and a value of each of: " +
                             (unchosen.empty() ? std::string("steps") : text::join(unchosen, ", "))}
          : planner_->preview(wanted);
}

std::string RunPanel::start(ExplorerState& state) {
  if (!runner_)
    return unavailable_reason_.empty() ? "no sweep engine in this build" : unavailable_reason_;
  if (session_->busy()) return "a sweep is already running";
  refresh_preview();
  if (!chosen_.error.empty()) return chosen_.error;
  state.start_live_sweep(runner_->device_name());
  progress_frames_ = 0;
  progress_shown_ = {};
  rows_while_running_ = 0;
  session_->start(request());
  return {};
}

namespace {

// "1-16" or "8, 9, 21": consecutive runs of steps collapsed.
std::string step_ranges(const std::vector<int>& steps) {
  std::string text;
  for (std::size_t i = 0; i < steps.size();) {
    std::size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1)
      ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(steps[i]) +
            (j > i ? "-" + std::to_string(steps[j]) : std::string());
    i = j + 1;
  }
  return text.empty() ? "none" : text;
}

}  // namespace

std::string RunPanel::summary(ExplorerState& state) {
  if (!planner_) return "run panel: " + unavailable_reason_;
  std::string text = "run panel: ";
  for (const StepTrack& track : tracks_) {
    std::vector<int> steps;
    for (const RunnableStep& step : track.steps)
      steps.push_back(step.step);
    text += track.name + " track steps " + step_ranges(steps) + "; ";
  }
  refresh_preview();
  const SweepRequest chosen = request();
  text += "ticked " + step_ranges(chosen.steps) + "; set " + chosen.config_set + ": ";
  text += chosen_.error.empty() ? std::to_string(chosen_.rows) + " rows to measure" : chosen_.error;
  if (session_ && session_->state() != SweepSession::State::idle) {
    text += "; sweep " + std::string(sweep_state_label(session_->state()));
    if (const auto live = state.live_file_index())
      text += ", " + std::to_string(state.files()[*live].rows.size()) + " live rows";
    if (session_->state() == SweepSession::State::failed) text += ": " + session_->error();
    text += "; progress shown in " + std::to_string(progress_frames_) + " frames (up to " +
            std::to_string(progress_shown_.completed) + " / " +
            std::to_string(progress_shown_.total) + "), " + std::to_string(rows_while_running_) +
            " live rows while running";
    if (const auto live = state.live_file_index()) {
      // The views draw state.rows(): count the live file's rows among them.
      const std::vector<ResultRow>& live_rows = state.files()[*live].rows;
      const std::size_t in_views = static_cast<std::size_t>(std::count_if(
          state.rows().rows().begin(), state.rows().rows().end(), [&](const ResultRow* row) {
            return !live_rows.empty() && row >= live_rows.data() &&
                   row < live_rows.data() + live_rows.size();
          }));
      text += "; " + std::to_string(in_views) + " live rows in the views";
    }
  }
  return text;
}

void RunPanel::draw_steps() {
  const auto count_label = [this](int step) {
    const auto found = every_step_.configs_per_step.find(step);
    return found == every_step_.configs_per_step.end() ? std::string("0")
                                                       : std::to_string(found->second);
  };
  ImGui::TextUnformatted("steps");
  ImGui::SameLine();
  ImGui::TextColored(kMutedColour, "(kernels built for the set)");
  for (const StepTrack& track : tracks_) {
    ImGui::PushID(track.name.c_str());
    ImGui::TextColored(kHeadingColour, "%s track (%s)", track.name.c_str(), track.arch.c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("all"))
      for (const RunnableStep& step : track.steps)
        steps_[step.step] = true;
    ImGui::SameLine();
    if (ImGui::SmallButton("none"))
      for (const RunnableStep& step : track.steps)
        steps_[step.step] = false;
    for (std::size_t i = 0; i < track.steps.size(); ++i) {
      const RunnableStep& step = track.steps[i];
      if (i % kStepsPerRow != 0) ImGui::SameLine(static_cast<float>(i % kStepsPerRow) * 76.0f);
      const std::string name = step_name(step.step);
      const std::string label =
          (name.size() < 2 ? " " : "") + name + " (" + count_label(step.step) + ")##run_step";
      ImGui::Checkbox(label.c_str(), &steps_[step.step]);
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("step %s: %s", step_name(step.step).c_str(), step.title.c_str());
    }
    ImGui::PopID();
  }
}

void RunPanel::draw(ExplorerState& state) {
  if (!planner_) {
    ImGui::TextColored(kMutedColour, "Run panel hidden:");
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(unavailable_reason_.empty() ? "no sweep engine in this build"
                                                       : unavailable_reason_.c_str());
    ImGui::PopTextWrapPos();
    return;
  }
  if (runner_) ImGui::TextColored(kMutedColour, "device: %s", runner_->device_name().c_str());
  const bool running = busy();
  ImGui::BeginDisabled(running);

  ImGui::SetNextItemWidth(-FLT_MIN);
  ImGui::Combo("##config_set", &config_set_, kConfigSets, IM_ARRAYSIZE(kConfigSets));
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextColored(kMutedColour, "%s", kConfigSetHelp[config_set_]);
  ImGui::PopTextWrapPos();
  if (config_set_ == IM_ARRAYSIZE(kConfigSets) - 1) {
    ImGui::SetNextItemWidth(-FLT_MIN);
    ImGui::InputTextWithHint("##shape", "B_r,B_c e.g. 128,64", &custom_shape_);
  }
  refresh_preview();
  draw_steps();

  // One chooser per problem axis of the table; an axis a derived value stands for (batch from N,
  // KV heads = heads) says so while none of its values is ticked.
  for (auto& [axis, choice] : axes_) {
    const AxisSpec& spec = axis_spec(axis);
    if (choice.values.empty()) continue;
    ImGui::TextUnformatted(std::string(spec.label).c_str());
    for (std::size_t i = 0; i < choice.values.size(); ++i) {
      if (i % 4 != 0 || i == 0) ImGui::SameLine();
      auto& [value, ticked] = choice.values[i];
      const std::string label = spec.text(value) + "##" + std::string(spec.name);
      ImGui::Checkbox(label.c_str(), &ticked);
    }
    if (spec.derived != nullptr && std::none_of(choice.values.begin(), choice.values.end(),
                                                [](const auto& value) { return value.second; })) {
      ImGui::SameLine();
      ImGui::TextColored(kMutedColour, "(derived)");
    }
  }
  ImGui::Checkbox("FA2 + cuDNN", &baselines_);
  ImGui::EndDisabled();

  refresh_preview();
  if (chosen_.error.empty()) {
    ImGui::TextColored(kMutedColour, "%zu rows to measure", chosen_.rows);
    if (!chosen_.notes.empty()) {
      ImGui::SameLine();
      ImGui::TextColored(kWarningColour, "(%zu notes)", chosen_.notes.size());
      if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        for (const std::string& note : chosen_.notes)
          ImGui::TextUnformatted(note.c_str());
        ImGui::EndTooltip();
      }
    }
  }

  if (!running) {
    ImGui::BeginDisabled(!runner_ || !chosen_.error.empty());
    if (ImGui::Button("Run sweep", ImVec2(-FLT_MIN, 0))) start(state);
    ImGui::EndDisabled();
    ImGui::PushTextWrapPos(0.0f);
    if (!runner_)
      ImGui::TextColored(kWarningColour, "cannot run here: %s", unavailable_reason_.c_str());
    else if (!chosen_.error.empty())
      ImGui::TextColored(kWarningColour, "%s", chosen_.error.c_str());
    ImGui::PopTextWrapPos();
  } else {
    const SweepProgress progress = session_->progress();
    ++progress_frames_;
    progress_shown_.completed = std::max(progress_shown_.completed, progress.completed);
    progress_shown_.total = std::max(progress_shown_.total, progress.total);
    if (const auto live = state.live_file_index())
      rows_while_running_ = std::max(rows_while_running_, state.files()[*live].rows.size());
    const float fraction = progress.total > 0 ? static_cast<float>(progress.completed) /
                                                    static_cast<float>(progress.total)
                                              : 0.0f;
    const std::string overlay =
        std::to_string(progress.completed) + " / " +
        (progress.total > 0 ? std::to_string(progress.total) : std::string("?"));
    ImGui::ProgressBar(fraction, ImVec2(-FLT_MIN, 0), overlay.c_str());
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(kMutedColour, "%s", progress.current.c_str());
    ImGui::PopTextWrapPos();
    ImGui::BeginDisabled(session_->state() == SweepSession::State::cancelling);
    if (ImGui::Button("Cancel", ImVec2(-FLT_MIN, 0))) session_->cancel();
    ImGui::EndDisabled();
  }
  if (!session_) return;
  const SweepSession::State session_state = session_->state();
  if (session_state != SweepSession::State::idle) {
    const std::string label(sweep_state_label(session_state));
    ImGui::TextColored(session_state == SweepSession::State::failed ? kWorseColour : kMutedColour,
                       "sweep %s", label.c_str());
    if (session_state == SweepSession::State::failed) {
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextColored(kWorseColour, "%s", session_->error().c_str());
      ImGui::PopTextWrapPos();
    }
  }

  if (const auto live = state.live_file_index()) {
    ImGui::Separator();
    ImGui::Text("%zu live rows", state.files()[*live].rows.size());
    ImGui::BeginDisabled(running);
    ImGui::SetNextItemWidth(-60);
    ImGui::InputText("##save_path", &save_path_);
    ImGui::SameLine();
    if (ImGui::Button("Save")) {
      const std::string error = state.save_file(*live, save_path_);
      save_message_ = error.empty() ? "saved " + save_path_ : error;
    }
    ImGui::EndDisabled();
  }
  if (!save_message_.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(kMutedColour, "%s", save_message_.c_str());
    ImGui::PopTextWrapPos();
  }
}

}  // namespace flashscope::explorer::gui
