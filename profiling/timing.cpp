#include "profiling/timing.hpp"

#include <algorithm>
#include <stdexcept>

#include "kernels/common/cuda_check.hpp"

namespace flashscope {

namespace {

// Owns the events of one timed batch.
class EventPairs {
 public:
  explicit EventPairs(int count) : events_(2 * static_cast<std::size_t>(count), nullptr) {
    for (cudaEvent_t& event : events_)
      FS_CUDA_CHECK(cudaEventCreate(&event));
  }
  ~EventPairs() {
    for (cudaEvent_t event : events_)
      if (event) cudaEventDestroy(event);
  }
  EventPairs(const EventPairs&) = delete;
  EventPairs& operator=(const EventPairs&) = delete;

  cudaEvent_t start(int i) const { return events_[2 * static_cast<std::size_t>(i)]; }
  cudaEvent_t stop(int i) const { return events_[2 * static_cast<std::size_t>(i) + 1]; }

 private:
  std::vector<cudaEvent_t> events_;
};

class SideStream {
 public:
  SideStream() { FS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~SideStream() { cudaStreamDestroy(stream_); }
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Three more launches like the timed ones (not timed, no NVTX range), each with a clock probe
// spinning on a side stream for half a launch: the probe is enqueued first so it is resident
// when the kernel fills the GPU, and the next one starts as it ends, all under load.
int sm_clock_under_load(const LaunchFunction& launch, const TimingSettings& settings,
                        cudaStream_t stream, L2Flusher* flusher, double median_ms) {
  constexpr int kClockLaunches = 3;
  const double spin_ms = std::clamp(0.5 * median_ms, 0.02, 5.0);
  const auto spin_ns = static_cast<std::uint64_t>(spin_ms * 1e6);
  const SideStream side;
  SmClockProbe clock(kClockLaunches);
  for (int i = 0; i < kClockLaunches; ++i) {
    if (settings.cache_mode == CacheMode::cold) flusher->flush(stream);
    clock.record(i, spin_ns, side.get());
    launch(stream);
  }
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  return clock.median_mhz(kClockLaunches, side.get());
}

}  // namespace

std::string_view cache_mode_name(CacheMode mode) {
  return mode == CacheMode::cold ? "cold" : "warm";
}

std::optional<CacheMode> cache_mode_from_string(std::string_view text) {
  if (text == "warm") return CacheMode::warm;
  if (text == "cold") return CacheMode::cold;
  return std::nullopt;
}

TimingStats summarize_samples(std::vector<double> samples_ms) {
  if (samples_ms.empty()) throw std::invalid_argument("summarize_samples: no samples");
  TimingStats stats;
  stats.samples_ms = samples_ms;
  std::sort(samples_ms.begin(), samples_ms.end());
  const std::size_t n = samples_ms.size();
  stats.median_ms =
      n % 2 == 1 ? samples_ms[n / 2] : (samples_ms[n / 2 - 1] + samples_ms[n / 2]) / 2;
  stats.min_ms = samples_ms.front();
  stats.max_ms = samples_ms.back();
  return stats;
}

L2Flusher::L2Flusher(int device) {
  int l2_bytes = 0;
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  bytes_ = 2 * static_cast<std::size_t>(l2_bytes);
  if (bytes_ > 0) FS_CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
}

L2Flusher::~L2Flusher() {
  if (buffer_) cudaFree(buffer_);
}

void L2Flusher::flush(cudaStream_t stream) {
  if (bytes_ > 0) FS_CUDA_CHECK(cudaMemsetAsync(buffer_, 0, bytes_, stream));
}

TimingStats time_launches(const LaunchFunction& launch, const TimingSettings& settings,
                          cudaStream_t stream, L2Flusher* flusher,
                          const MeasurementRangeName& range_name) {
  if (settings.timed_runs < 1) throw std::invalid_argument("timed_runs must be at least 1");
  const bool cold = settings.cache_mode == CacheMode::cold;
  if (cold && flusher == nullptr)
    throw std::invalid_argument("time_launches: cold-L2 timing needs an L2Flusher");
  for (int i = 0; i < settings.warmup_runs; ++i) {
    if (cold) flusher->flush(stream);
    const MeasurementRange range{range_name};
    launch(stream);
  }
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));

  const EventPairs events(settings.timed_runs);
  for (int i = 0; i < settings.timed_runs; ++i) {
    if (cold) flusher->flush(stream);
    const MeasurementRange range{range_name};
    FS_CUDA_CHECK(cudaEventRecord(events.start(i), stream));
    launch(stream);
    FS_CUDA_CHECK(cudaEventRecord(events.stop(i), stream));
  }
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<double> samples(static_cast<std::size_t>(settings.timed_runs));
  for (int i = 0; i < settings.timed_runs; ++i) {
    float ms = 0;
    FS_CUDA_CHECK(cudaEventElapsedTime(&ms, events.start(i), events.stop(i)));
    samples[static_cast<std::size_t>(i)] = ms;
  }
  TimingStats stats = summarize_samples(std::move(samples));
  stats.sm_clock_mhz = sm_clock_under_load(launch, settings, stream, flusher, stats.median_ms);
  return stats;
}

}  // namespace flashscope
