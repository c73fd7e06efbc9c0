// The seam between the explorer and the sweep engine. explorer/gui/sweep_engine_adapter.hpp
// implements SweepRunner over the headless sweep (profiling/sweep/sweep_parent.hpp); the run panel
// runs it on a worker thread through SweepSession and streams its rows into the views. Nothing here
// needs a GPU, so the session logic is tested with fake runners.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kernels/common/problem_axes.hpp"
#include "profiling/results/results.hpp"

namespace flashscope::explorer {

struct SweepRequest {
  std::string config_set =
      "prog";  // selection key (spec §5.4): prog, prog_all, tune, all, "128,64"; or built
  std::vector<int> steps;  // kernel steps (SweepPlanner::steps() lists those built)
  // The values of each problem axis to measure (explorer --csv's option per axis); an axis
  // without an entry takes its sweep default or is derived (batch from N, heads_kv = heads).
  AxisValues axes;
  bool include_baselines = true;  // also measure FA2 and cuDNN at each problem
  bool operator==(const SweepRequest&) const = default;
};

struct SweepProgress {
  int completed = 0;    // measurements finished
  int total = 0;        // 0 while not yet known
  std::string current;  // what runs now, for the progress bar's caption
};

struct SweepCallbacks {
  std::function<void(ResultRow)> on_row;  // one per finished measurement
  std::function<void(const SweepProgress&)> on_progress;
};

// A step this build can measure, as the run panel lists it.
struct RunnableStep {
  int step = 0;
  std::string title;  // the seed's iteration name, or the Hopper step's (configs/)
  bool operator==(const RunnableStep&) const = default;
};

// The steps of one track (Ampere: the seed's steps before kFirstHopperStep; Hopper: from it on;
// Backward: the backward steps B1, B2, ..., numbered from 101).
struct StepTrack {
  std::string name;  // "Ampere", "Hopper", "Backward"
  std::string arch;  // what the track's newest kernels need: "sm_80+", "sm_90a"
  std::vector<RunnableStep> steps;
};
std::string_view track_name(int step);
// Groups `steps` (any order) by track, tracks and steps in step order.
std::vector<StepTrack> group_by_track(std::vector<RunnableStep> steps);

// What a request would measure, worked out from the build's kernels before anything runs (no GPU
// needed): the sweep's own plan (profiling/sweep/sweep_plan.hpp), so the numbers are the sweep's.
struct SweepPreview {
  std::map<int, std::size_t> configs_per_step;  // distinct (config, dtype) kernels measured
  std::size_t rows = 0;                         // rows the sweep writes, references included
  std::vector<std::string> notes;               // what is left out and why
  std::string error;                            // non-empty: the request measures nothing, and why
};

// The run panel's view of the build: its steps and the plan a request expands to.
class SweepPlanner {
 public:
  virtual ~SweepPlanner() = default;
  virtual std::vector<RunnableStep> steps() const = 0;
  virtual SweepPreview preview(const SweepRequest& request) const = 0;
};

class SweepRunner {
 public:
  virtual ~SweepRunner() = default;

  virtual std::string device_name() const = 0;

  // The OpenGL renderer that draws the window (GL_RENDERER), once it is known. A runner whose
  // GPU also draws the window may measure differently (runners that do not care ignore it).
  virtual void set_display_renderer(const std::string& gl_renderer) { (void)gl_renderer; }

  // Runs the sweep on the calling thread and returns when it is done, or soon after `stop` is
  // requested (checking it between measurements is enough). Callbacks are invoked on the calling
  // thread. Throws on failure; the exception's message is shown to the user.
  virtual void run(const SweepRequest& request, const SweepCallbacks& callbacks,
                   std::stop_token stop) = 0;
};

// One background sweep at a time. The GUI thread polls it once per frame; the worker hands rows
// over under a mutex, so the views never see a row while it is being written.
class SweepSession {
 public:
  enum class State { idle, running, cancelling, finished, cancelled, failed };

  explicit SweepSession(std::shared_ptr<SweepRunner> runner);
  ~SweepSession();  // cancels a running sweep and waits for it to stop
  SweepSession(const SweepSession&) = delete;
  SweepSession& operator=(const SweepSession&) = delete;

  // Starts a sweep; ignored while one is running or cancelling.
  void start(SweepRequest request);
  void cancel();

  State state() const;
  bool busy() const;  // running or cancelling
  SweepProgress progress() const;
  std::string error() const;  // the runner's message when state() == failed

  std::vector<ResultRow> take_rows();  // rows delivered since the last call, in order

 private:
  void work(SweepRequest request, std::stop_token stop);

  std::shared_ptr<SweepRunner> runner_;
  mutable std::mutex mutex_;
  State state_ = State::idle;
  SweepProgress progress_;
  std::string error_;
  std::vector<ResultRow> pending_rows_;
  std::jthread worker_;  // last member: joined before the state it uses is destroyed
};

std::string_view sweep_state_label(SweepSession::State state);

}  // namespace flashscope::explorer
