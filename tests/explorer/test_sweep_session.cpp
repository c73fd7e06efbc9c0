// SweepSession: the background sweep the run panel drives, exercised with fake runners.
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "configs/config_sets.hpp"
#include "explorer/model/sweep_session.hpp"
#include "kernels/common/config.hpp"

using namespace flashscope;
using namespace flashscope::explorer;

namespace {

ResultRow row_for(int step) {
  ResultRow row;
  row.subject = RowSubject::kernel(step);
  row.problem.dtype = DType::FP16;
  row.problem.seq_len = 4096;
  return row;
}

// Delivers one row per requested step.
class FiniteRunner : public SweepRunner {
 public:
  std::string device_name() const override { return "fake"; }
  void run(const SweepRequest& request, const SweepCallbacks& callbacks, std::stop_token) override {
    int done = 0;
    for (int step : request.steps) {
      callbacks.on_row(row_for(step));
      callbacks.on_progress({++done, static_cast<int>(request.steps.size()), "step"});
    }
  }
};

// Delivers rows until asked to stop.
class EndlessRunner : public SweepRunner {
 public:
  std::string device_name() const override { return "fake"; }
  void run(const SweepRequest&, const SweepCallbacks& callbacks, std::stop_token stop) override {
    for (int step = 1; !stop.stop_requested(); ++step) {
      callbacks.on_row(row_for(step));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

class FailingRunner : public SweepRunner {
 public:
  std::string device_name() const override { return "fake"; }
  void run(const SweepRequest&, const SweepCallbacks&, std::stop_token) override {
    throw std::runtime_error("cudaMalloc failed: out of memory");
  }
};

bool wait_until_idle(const SweepSession& session) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (session.busy()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

TEST_CASE("a sweep delivers its rows in order and finishes") {
  SweepSession session(std::make_shared<FiniteRunner>());
  CHECK(session.state() == SweepSession::State::idle);
  SweepRequest request;
  request.steps = {1, 2, 3};
  session.start(request);
  REQUIRE(wait_until_idle(session));
  CHECK(session.state() == SweepSession::State::finished);
  const auto rows = session.take_rows();
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].subject.text() == "1");
  CHECK(rows[2].subject.text() == "3");
  CHECK(session.take_rows().empty());
  CHECK(session.progress().completed == 3);
  CHECK(session.progress().total == 3);

  // A second sweep may follow the first.
  request.steps = {7};
  session.start(request);
  REQUIRE(wait_until_idle(session));
  CHECK(session.take_rows().size() == 1);
}

TEST_CASE("cancel stops a running sweep and keeps what it measured") {
  SweepSession session(std::make_shared<EndlessRunner>());
  session.start({});
  CHECK(session.busy());
  session.start({});  // ignored while running
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  session.cancel();
  REQUIRE(wait_until_idle(session));
  CHECK(session.state() == SweepSession::State::cancelled);
  CHECK_FALSE(session.take_rows().empty());
}

TEST_CASE("a runner's exception becomes the session's error") {
  SweepSession session(std::make_shared<FailingRunner>());
  session.start({});
  REQUIRE(wait_until_idle(session));
  CHECK(session.state() == SweepSession::State::failed);
  CHECK(session.error() == "cudaMalloc failed: out of memory");
  CHECK(sweep_state_label(session.state()) == "failed");
}

TEST_CASE("destroying a session stops its sweep") {
  auto session = std::make_unique<SweepSession>(std::make_shared<EndlessRunner>());
  session->start({});
  session.reset();  // must return: the destructor requests stop and joins
  CHECK(true);
}

// ---- The run panel's steps (issue 21): every step of configs/, grouped by track --------------

TEST_CASE("group_by_track splits every configs/ step into the Ampere, Hopper and backward tracks") {
  std::vector<RunnableStep> steps;
  for (const configs::StepInfo& info : configs::steps())  // reversed: the order must not matter
    steps.insert(steps.begin(), {info.step, std::string(info.title)});
  const std::vector<StepTrack> tracks = group_by_track(steps);
  REQUIRE(tracks.size() == 3);
  CHECK(tracks[0].name == "Ampere");
  CHECK(tracks[1].name == "Hopper");
  CHECK(tracks[1].arch == "sm_90a");
  CHECK(tracks[0].steps.front().step == configs::kFirstStep);
  CHECK(tracks[0].steps.back().step == kFirstHopperStep - 1);
  CHECK(tracks[1].steps.front().step == kFirstHopperStep);
  CHECK(tracks[1].steps.back().step == configs::kLastStep);
  // The backward steps, their arch from their descriptors (B1 and B2 are Ampere steps).
  CHECK(tracks[2].name == "Backward");
  CHECK(tracks[2].steps.front().step == kFirstBackwardStep);
  CHECK(tracks[2].steps.back().step == configs::kLastBackwardStep);
  CHECK(tracks[2].arch ==
        (configs::step_descriptor(configs::kLastBackwardStep).track == Track::hopper ? "sm_90a"
                                                                                     : "sm_80+"));
  CHECK(tracks[0].steps.size() + tracks[1].steps.size() + tracks[2].steps.size() ==
        configs::steps().size());
  for (const StepTrack& track : tracks)
    for (std::size_t i = 1; i < track.steps.size(); ++i)
      CHECK(track.steps[i].step == track.steps[i - 1].step + 1);
  CHECK(tracks[1].steps.front().title == configs::step_info(kFirstHopperStep).title);
}

TEST_CASE("a step after the last one joins the Hopper track without any list to update") {
  const std::vector<StepTrack> tracks =
      group_by_track({{configs::kLastStep + 1, "a later step"}, {2, "Swizzling"}});
  REQUIRE(tracks.size() == 2);
  CHECK(tracks[0].steps == std::vector<RunnableStep>{{2, "Swizzling"}});
  CHECK(tracks[1].steps == std::vector<RunnableStep>{{configs::kLastStep + 1, "a later step"}});
  CHECK(track_name(configs::kLastStep + 1) == "Hopper");
  CHECK(group_by_track({}).empty());
}
