// The CUDA half of interleaved measurement (interleaved.hpp): CudaBatchTimer launches and times
// batches in the three launch patterns; measure_interleaved() runs the rounds on it.
#include <chrono>
#include <stdexcept>

#include "kernels/common/cuda_check.hpp"
#include "profiling/measurement/interleaved.hpp"
#include "profiling/measurement/nvtx_ranges.hpp"

namespace flashscope::measurement {

namespace {

// A growable list of CUDA events (timing enabled), destroyed with it.
class Events {
 public:
  Events() = default;
  ~Events() {
    for (cudaEvent_t event : events_)
      cudaEventDestroy(event);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  Events(Events&& other) noexcept : events_(std::move(other.events_)) { other.events_.clear(); }

  void reserve(std::size_t count) {
    while (events_.size() < count) {
      cudaEvent_t event = nullptr;
      FS_CUDA_CHECK(cudaEventCreate(&event));
      events_.push_back(event);
    }
  }
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

float elapsed_ms(cudaEvent_t start, cudaEvent_t stop) {
  float ms = 0;
  FS_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms;
}

}  // namespace

struct CudaBatchTimer::State {
  std::vector<Contender> contenders;
  cudaStream_t stream = nullptr;
  LaunchPattern requested = LaunchPattern::stream;
  LaunchPattern active = LaunchPattern::stream;
  double gap_us = 0;
  std::function<void(cudaStream_t)> between;
  bool prepared = false;
  std::string fallback_note;  // why a graph capture failed; the cell stays stream from then on

  std::vector<int> launches;              // per contender, fixed by prepare()
  std::vector<Events> batch_events;       // per contender: 2 (stream, graph) or 2 x launches
  std::vector<cudaGraphExec_t> graphs;    // per contender, graph pattern only
  std::vector<std::size_t> enqueued;      // this round's batches, in order
  std::vector<bool> enqueued_this_round;  // per contender
  Events warmup_events;

  bool per_launch_events() const { return active == LaunchPattern::gapped; }

  // What comes before each launch, outside the events, in the gapped pattern.
  void before_launch() {
    if (gap_us > 0) FS_CUDA_CHECK(enqueue_idle_gap(gap_us, stream));
    if (between) between(stream);
  }

  void destroy_graphs() {
    for (cudaGraphExec_t& graph : graphs)
      if (graph) {
        cudaGraphExecDestroy(graph);
        graph = nullptr;
      }
    graphs.clear();
  }

  // Captures `launches[c]` launches of contender c into a graph. Returns what went wrong, or an
  // empty string. The stream is out of capture mode afterwards either way.
  std::string capture(std::size_t c) {
    cudaError_t status = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (status != cudaSuccess)
      return std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(status);
    std::string failure;
    try {
      for (int i = 0; i < launches[c]; ++i)
        contenders[c].launch(stream);
    } catch (const std::exception& error) {
      failure = error.what();
    }
    cudaGraph_t graph = nullptr;
    status = cudaStreamEndCapture(stream, &graph);
    if (failure.empty() && status != cudaSuccess)
      failure = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(status);
    if (failure.empty() && graph == nullptr) failure = "the capture produced no graph";
    cudaGraphExec_t exec = nullptr;
    if (failure.empty()) {
      status = cudaGraphInstantiate(&exec, graph, 0);
      if (status != cudaSuccess)
        failure = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(status);
    }
    if (graph) cudaGraphDestroy(graph);
    if (failure.empty()) {
      status = cudaGraphUpload(exec, stream);
      if (status != cudaSuccess)
        failure = std::string("cudaGraphUpload: ") + cudaGetErrorString(status);
    }
    if (!failure.empty()) {
      if (exec) cudaGraphExecDestroy(exec);
      cudaGetLastError();  // a failed capture is not sticky; clear it for the calls that follow
      return failure;
    }
    graphs[c] = exec;
    return "";
  }
};

CudaBatchTimer::CudaBatchTimer(std::vector<Contender> contenders, cudaStream_t stream,
                               LaunchPattern pattern, double gap_us,
                               std::function<void(cudaStream_t)> between_launches)
    : state_(std::make_unique<State>()) {
  if (contenders.empty()) throw std::invalid_argument("CudaBatchTimer: no contender");
  if (stream == nullptr)
    throw std::invalid_argument(
        "CudaBatchTimer: needs a created stream (the legacy default stream cannot be captured "
        "and synchronises with everything)");
  if (!(gap_us >= 0)) throw std::invalid_argument("CudaBatchTimer: gap_us must be 0 or more");
  if (gap_us > 0 && pattern != LaunchPattern::gapped)
    throw std::invalid_argument("CudaBatchTimer: gap_us applies to the gapped pattern only");
  for (const Contender& contender : contenders)
    if (!contender.launch)
      throw std::invalid_argument("CudaBatchTimer: contender '" + contender.name +
                                  "' has no launch function");
  State& s = *state_;
  s.contenders = std::move(contenders);
  s.stream = stream;
  s.requested = pattern;
  // A hook between launches needs its own events around each launch, whatever was asked.
  s.active = between_launches ? LaunchPattern::gapped : pattern;
  s.gap_us = gap_us;
  s.between = std::move(between_launches);
  s.enqueued_this_round.assign(s.contenders.size(), false);
  s.warmup_events.reserve(2);
}

CudaBatchTimer::~CudaBatchTimer() {
  if (state_) {
    cudaStreamSynchronize(state_->stream);
    state_->destroy_graphs();
  }
}

std::size_t CudaBatchTimer::contenders() const {
  return state_->contenders.size();
}

double CudaBatchTimer::warm_up(std::size_t contender, int launches) {
  State& s = *state_;
  if (contender >= s.contenders.size() || launches < 1)
    throw std::invalid_argument("CudaBatchTimer::warm_up: bad contender or launch count");
  const ContenderLaunch& launch = s.contenders[contender].launch;
  const MeasurementRange range{s.contenders[contender].name};
  double total_ms = 0;
  if (s.per_launch_events()) {
    s.warmup_events.reserve(2 * static_cast<std::size_t>(launches));
    for (int i = 0; i < launches; ++i) {
      s.before_launch();
      FS_CUDA_CHECK(cudaEventRecord(s.warmup_events[2 * i], s.stream));
      launch(s.stream);
      FS_CUDA_CHECK(cudaEventRecord(s.warmup_events[2 * i + 1], s.stream));
    }
    FS_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    for (int i = 0; i < launches; ++i)
      total_ms += elapsed_ms(s.warmup_events[2 * i], s.warmup_events[2 * i + 1]);
  } else {
    FS_CUDA_CHECK(cudaEventRecord(s.warmup_events[0], s.stream));
    for (int i = 0; i < launches; ++i)
      launch(s.stream);
    FS_CUDA_CHECK(cudaEventRecord(s.warmup_events[1], s.stream));
    FS_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    total_ms = elapsed_ms(s.warmup_events[0], s.warmup_events[1]);
  }
  return total_ms / launches;
}

PatternChoice CudaBatchTimer::prepare(const std::vector<int>& launches_per_batch) {
  State& s = *state_;
  if (!s.enqueued.empty()) throw std::logic_error("CudaBatchTimer::prepare: a round is still open");
  if (launches_per_batch.size() != s.contenders.size())
    throw std::invalid_argument("CudaBatchTimer::prepare: one launch count per contender");
  for (const int launches : launches_per_batch)
    if (launches < 1) throw std::invalid_argument("CudaBatchTimer::prepare: a batch is empty");
  s.launches = launches_per_batch;
  s.prepared = true;

  PatternChoice choice{s.active, s.fallback_note};
  if (s.requested == LaunchPattern::graph && s.active == LaunchPattern::gapped)
    choice.note = "graph asked for, but a hook runs between launches: timed gapped";
  if (s.active == LaunchPattern::graph) {
    FS_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    s.destroy_graphs();
    s.graphs.assign(s.contenders.size(), nullptr);
    for (std::size_t c = 0; c < s.contenders.size(); ++c) {
      const std::string failure = s.capture(c);
      if (!failure.empty()) {
        s.destroy_graphs();
        s.active = LaunchPattern::stream;
        s.fallback_note = "graph capture failed for " + s.contenders[c].name + " (" + failure +
                          "); every contender of the cell timed as stream";
        choice = {LaunchPattern::stream, s.fallback_note};
        break;
      }
    }
  }
  s.batch_events.clear();
  for (std::size_t c = 0; c < s.contenders.size(); ++c) {
    Events events;
    events.reserve(s.per_launch_events() ? 2 * static_cast<std::size_t>(s.launches[c]) : 2);
    s.batch_events.push_back(std::move(events));
  }
  return choice;
}

void CudaBatchTimer::enqueue_batch(std::size_t contender) {
  State& s = *state_;
  if (!s.prepared) throw std::logic_error("CudaBatchTimer::enqueue_batch before prepare");
  if (contender >= s.contenders.size())
    throw std::invalid_argument("CudaBatchTimer::enqueue_batch: no such contender");
  if (s.enqueued_this_round[contender])
    throw std::logic_error("CudaBatchTimer::enqueue_batch: contender enqueued twice in a round");
  const Events& events = s.batch_events[contender];
  const ContenderLaunch& launch = s.contenders[contender].launch;
  const int launches = s.launches[contender];
  const MeasurementRange range{s.contenders[contender].name};
  switch (s.active) {
    case LaunchPattern::stream:
      FS_CUDA_CHECK(cudaEventRecord(events[0], s.stream));
      for (int i = 0; i < launches; ++i)
        launch(s.stream);
      FS_CUDA_CHECK(cudaEventRecord(events[1], s.stream));
      break;
    case LaunchPattern::graph:
      FS_CUDA_CHECK(cudaEventRecord(events[0], s.stream));
      FS_CUDA_CHECK(cudaGraphLaunch(s.graphs[contender], s.stream));
      FS_CUDA_CHECK(cudaEventRecord(events[1], s.stream));
      break;
    case LaunchPattern::gapped:
      for (int i = 0; i < launches; ++i) {
        s.before_launch();
        FS_CUDA_CHECK(cudaEventRecord(events[2 * static_cast<std::size_t>(i)], s.stream));
        launch(s.stream);
        FS_CUDA_CHECK(cudaEventRecord(events[2 * static_cast<std::size_t>(i) + 1], s.stream));
      }
      break;
  }
  s.enqueued.push_back(contender);
  s.enqueued_this_round[contender] = true;
}

std::vector<double> CudaBatchTimer::finish_round() {
  State& s = *state_;
  FS_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  std::vector<double> times;
  times.reserve(s.enqueued.size());
  for (const std::size_t c : s.enqueued) {
    const Events& events = s.batch_events[c];
    const int launches = s.launches[c];
    double total_ms = 0;
    if (s.per_launch_events())
      for (int i = 0; i < launches; ++i)
        total_ms += elapsed_ms(events[2 * static_cast<std::size_t>(i)],
                               events[2 * static_cast<std::size_t>(i) + 1]);
    else
      total_ms = elapsed_ms(events[0], events[1]);
    times.push_back(total_ms / launches);
    s.enqueued_this_round[c] = false;
  }
  s.enqueued.clear();
  return times;
}

double CudaBatchTimer::seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

InterleavedResult measure_interleaved(std::vector<Contender> contenders,
                                      const std::vector<RatioPair>& ratios,
                                      const InterleavedSettings& settings, cudaStream_t stream,
                                      const RoundHooks& hooks,
                                      std::function<void(cudaStream_t)> between_launches) {
  validate_interleaved_settings(settings);
  CudaBatchTimer timer(std::move(contenders), stream, settings.pattern, settings.gap_us,
                       std::move(between_launches));
  return run_interleaved(timer, ratios, settings, hooks);
}

}  // namespace flashscope::measurement
