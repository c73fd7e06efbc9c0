#include <imgui.h>
#include <imgui_stdlib.h>  // after imgui.h, which it needs

#include <cstdio>
#include <string>

#include "explorer/gui/views.hpp"

namespace flashscope::explorer::gui {

namespace {

// Selection keys of spec §5.4; the last entry takes a "B_r,B_c" text.
constexpr const char* kConfigSets[] = {"prog", "prog_all", "tune", "all", "B_r,B_c"};
constexpr const char* kConfigSetHelp[] = {
    "progression: one config per step 1-7 (7)",
    "extended progression: 8 block shapes per entry (56)",
    "auto-tune search space, both dtypes (80)",
    "the build's instantiation list",
    "auto-tune configs with this block shape",
};
constexpr int kDefaultSeqLens[] = {512, 1024, 2048, 4096, 8192, 16384};

}  // namespace

RunPanel::RunPanel(std::shared_ptr<SweepRunner> runner, std::string unavailable_reason)
    : runner_(std::move(runner)), unavailable_reason_(std::move(unavailable_reason)) {
  if (runner_) session_ = std::make_unique<SweepSession>(runner_);
  for (bool& step : steps_)
    step = true;
  for (int seq_len : kDefaultSeqLens)
    seq_lens_.emplace_back(seq_len, seq_len == 4096);
}

bool RunPanel::busy() const {
  return session_ && session_->busy();
}

void RunPanel::stream_rows(ExplorerState& state) {
  if (session_) state.append_live_rows(session_->take_rows());
}

void RunPanel::draw(ExplorerState& state) {
  if (!runner_) {
    ImGui::TextColored(kMutedColour, "Run panel hidden:");
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(unavailable_reason_.empty() ? "no sweep engine in this build"
                                                       : unavailable_reason_.c_str());
    ImGui::PopTextWrapPos();
    return;
  }
  ImGui::TextColored(kMutedColour, "device: %s", runner_->device_name().c_str());
  const bool running = session_->busy();
  ImGui::BeginDisabled(running);

  ImGui::SetNextItemWidth(-FLT_MIN);
  ImGui::Combo("##config_set", &config_set_, kConfigSets, IM_ARRAYSIZE(kConfigSets));
  ImGui::TextColored(kMutedColour, "%s", kConfigSetHelp[config_set_]);
  if (config_set_ == IM_ARRAYSIZE(kConfigSets) - 1) {
    ImGui::SetNextItemWidth(-FLT_MIN);
    ImGui::InputTextWithHint("##shape", "B_r,B_c e.g. 128,64", &custom_shape_);
  }

  ImGui::TextUnformatted("steps");
  for (int step = 1; step <= 16; ++step) {
    if ((step - 1) % 6 != 0) ImGui::SameLine(0.0f, 4.0f);
    char label[24];
    std::snprintf(label, sizeof label, "%2d##run_step", step);
    ImGui::Checkbox(label, &steps_[step - 1]);
  }
  if (ImGui::SmallButton("all steps"))
    for (bool& step : steps_)
      step = true;
  ImGui::SameLine();
  if (ImGui::SmallButton("no steps"))
    for (bool& step : steps_)
      step = false;

  ImGui::TextUnformatted("N");
  for (std::size_t i = 0; i < seq_lens_.size(); ++i) {
    if (i % 3 != 0) ImGui::SameLine();
    const std::string label = std::to_string(seq_lens_[i].first);
    ImGui::Checkbox(label.c_str(), &seq_lens_[i].second);
  }
  ImGui::Checkbox("fp16", &fp16_);
  ImGui::SameLine();
  ImGui::Checkbox("bf16", &bf16_);
  ImGui::SameLine();
  ImGui::Checkbox("FA2 + cuDNN", &references_);
  ImGui::EndDisabled();

  SweepRequest request;
  request.config_set =
      config_set_ == IM_ARRAYSIZE(kConfigSets) - 1 ? custom_shape_ : kConfigSets[config_set_];
  for (int step = 1; step <= 16; ++step)
    if (steps_[step - 1]) request.steps.push_back(step);
  for (const auto& [seq_len, chosen] : seq_lens_)
    if (chosen) request.seq_lens.push_back(seq_len);
  if (fp16_) request.dtypes.push_back("fp16");
  if (bf16_) request.dtypes.push_back("bf16");
  request.include_references = references_;
  const bool complete =
      !request.steps.empty() && !request.seq_lens.empty() && !request.dtypes.empty();

  if (!running) {
    ImGui::BeginDisabled(!complete);
    if (ImGui::Button("Run sweep", ImVec2(-FLT_MIN, 0))) {
      state.start_live_sweep(runner_->device_name());
      session_->start(request);
    }
    ImGui::EndDisabled();
    if (!complete) ImGui::TextColored(kWarningColour, "choose at least one step, N and dtype");
  } else {
    const SweepProgress progress = session_->progress();
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
