#include "explorer/model/sweep_session.hpp"

#include <algorithm>

#include "configs/config_sets.hpp"
#include "kernels/common/config.hpp"
#include "kernels/common/step_descriptor.hpp"

namespace flashscope::explorer {

std::string_view track_name(int step) {
  // The backward steps (101, ...: step_descriptor.hpp) are a progression of their own, whatever
  // instructions they use.
  if (is_backward_step_number(step)) return "Backward";
  return step >= kFirstHopperStep ? "Hopper" : "Ampere";
}

namespace {

// What a step's kernels need: its descriptor's track (B1 and B2 are Ampere steps); a step no
// descriptor declares yet is placed by its number, as track_name places it.
std::string_view track_arch(int step) {
  const StepDescriptor* descriptor = configs::find_step_descriptor(step);
  const bool hopper =
      descriptor != nullptr ? descriptor->track == Track::hopper : step >= kFirstHopperStep;
  return hopper ? "sm_90a" : "sm_80+";
}

}  // namespace

std::vector<StepTrack> group_by_track(std::vector<RunnableStep> steps) {
  std::sort(steps.begin(), steps.end(),
            [](const RunnableStep& a, const RunnableStep& b) { return a.step < b.step; });
  std::vector<StepTrack> tracks;
  for (RunnableStep& step : steps) {
    const std::string_view name = track_name(step.step);
    if (tracks.empty() || tracks.back().name != name) tracks.push_back({std::string(name), "", {}});
    // A track's arch is its newest step's: the backward track starts with Ampere steps (B1, B2)
    // and goes on with Hopper ones (B3+).
    tracks.back().arch = std::string(track_arch(step.step));
    tracks.back().steps.push_back(std::move(step));
  }
  return tracks;
}

SweepSession::SweepSession(std::shared_ptr<SweepRunner> runner) : runner_(std::move(runner)) {}

SweepSession::~SweepSession() {
  if (worker_.joinable()) {
    worker_.request_stop();
    worker_.join();
  }
}

void SweepSession::start(SweepRequest request) {
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::running || state_ == State::cancelling) return;
    state_ = State::running;
    progress_ = {};
    error_.clear();
  }
  if (worker_.joinable()) worker_.join();  // the previous sweep has already returned
  worker_ = std::jthread(
      [this, request = std::move(request)](std::stop_token stop) { work(request, stop); });
}

void SweepSession::cancel() {
  std::lock_guard lock(mutex_);
  if (state_ != State::running) return;
  state_ = State::cancelling;
  worker_.request_stop();
}

void SweepSession::work(SweepRequest request, std::stop_token stop) {
  SweepCallbacks callbacks;
  callbacks.on_row = [this](ResultRow row) {
    std::lock_guard lock(mutex_);
    pending_rows_.push_back(std::move(row));
  };
  callbacks.on_progress = [this](const SweepProgress& progress) {
    std::lock_guard lock(mutex_);
    progress_ = progress;
  };
  State outcome = State::finished;
  std::string error;
  try {
    runner_->run(request, callbacks, stop);
    if (stop.stop_requested()) outcome = State::cancelled;
  } catch (const std::exception& exception) {
    outcome = State::failed;
    error = exception.what();
  } catch (...) {
    outcome = State::failed;
    error = "the sweep stopped with an unknown exception";
  }
  std::lock_guard lock(mutex_);
  state_ = outcome;
  error_ = std::move(error);
}

SweepSession::State SweepSession::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

bool SweepSession::busy() const {
  const State current = state();
  return current == State::running || current == State::cancelling;
}

SweepProgress SweepSession::progress() const {
  std::lock_guard lock(mutex_);
  return progress_;
}

std::string SweepSession::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

std::vector<ResultRow> SweepSession::take_rows() {
  std::lock_guard lock(mutex_);
  std::vector<ResultRow> rows;
  rows.swap(pending_rows_);
  return rows;
}

std::string_view sweep_state_label(SweepSession::State state) {
  switch (state) {
    case SweepSession::State::idle:
      return "idle";
    case SweepSession::State::running:
      return "running";
    case SweepSession::State::cancelling:
      return "cancelling";
    case SweepSession::State::finished:
      return "finished";
    case SweepSession::State::cancelled:
      return "cancelled";
    case SweepSession::State::failed:
      return "failed";
  }
  return "?";
}

}  // namespace flashscope::explorer
