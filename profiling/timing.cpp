#include "profiling/timing.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/device_buffer.hpp"

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

// Three more launches like the timed ones (not timed, no NVTX range), each with a clock probe
// spinning on a side stream for half a launch: the probe is enqueued first so it is resident
// when the kernel fills the GPU, and the next one starts as it ends, all under load.
int sm_clock_under_load(const LaunchFunction& launch, const TimingSettings& settings,
                        cudaStream_t stream, L2Flusher* flusher, double median_ms) {
  constexpr int kClockLaunches = 3;
  const double spin_ms = std::clamp(0.5 * median_ms, 0.02, 5.0);
  const auto spin_ns = static_cast<std::uint64_t>(spin_ms * 1e6);
  const CudaStream side;
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
  buffer_ = DeviceBuffer(2 * static_cast<std::size_t>(l2_bytes));
}

void L2Flusher::flush(cudaStream_t stream) {
  if (buffer_) FS_CUDA_CHECK(cudaMemsetAsync(buffer_.get(), 0, buffer_.bytes(), stream));
}

void validate_timing_settings(const TimingSettings& settings) {
  if (settings.timed_runs < 1) throw std::invalid_argument("timed_runs must be at least 1");
  if (settings.min_timed_runs < 1) throw std::invalid_argument("min_timed_runs must be at least 1");
  if (settings.warmup_runs < 1)
    throw std::invalid_argument("warmup_runs must be at least 1 (the first gives the estimate)");
  if (!(settings.target_ms >= 0)) throw std::invalid_argument("target_ms must be 0 or more");
}

int timed_launch_count(const TimingSettings& settings, double estimate_ms) {
  if (settings.target_ms <= 0 || estimate_ms <= 0) return settings.timed_runs;
  const double wanted = std::ceil(settings.target_ms / estimate_ms);
  const int at_least = std::min(settings.min_timed_runs, settings.timed_runs);
  return static_cast<int>(std::clamp(wanted, double(at_least), double(settings.timed_runs)));
}

int further_warmup_count(const TimingSettings& settings, double estimate_ms) {
  if (settings.target_ms <= 0 || estimate_ms <= 0) return settings.warmup_runs - 1;
  const double wanted = std::ceil(settings.target_ms / 2 / estimate_ms);
  const int at_least = std::min(2, settings.warmup_runs);
  return static_cast<int>(std::clamp(wanted, double(at_least), double(settings.warmup_runs))) - 1;
}

std::string timing_summary(const TimingSettings& settings) {
  if (settings.target_ms <= 0)
    return std::to_string(settings.warmup_runs) + " warm-up + " +
           std::to_string(settings.timed_runs) + " timed launches";
  const int at_least = std::min(settings.min_timed_runs, settings.timed_runs);
  std::string timed = at_least == settings.timed_runs
                          ? std::to_string(at_least)
                          : std::to_string(at_least) + ".." + std::to_string(settings.timed_runs);
  std::ostringstream target;
  target << settings.target_ms;
  return "up to " + std::to_string(settings.warmup_runs) + " warm-up + " + timed +
         " timed launches (target " + target.str() + " ms)";
}

TimingStats time_launches(const LaunchFunction& launch, const TimingSettings& settings,
                          cudaStream_t stream, L2Flusher* flusher,
                          const MeasurementRangeName& range_name) {
  validate_timing_settings(settings);
  const bool cold = settings.cache_mode == CacheMode::cold;
  if (cold && flusher == nullptr)
    throw std::invalid_argument("time_launches: cold-L2 timing needs an L2Flusher");

  // Warm-up: the first launch, timed, sizes the rest of the warm-up; the last one, timed once the
  // clocks have settled, sizes the timed batch.
  const EventPairs warmup_events(2);
  if (cold) flusher->flush(stream);
  {
    const MeasurementRange range{range_name};
    FS_CUDA_CHECK(cudaEventRecord(warmup_events.start(0), stream));
    launch(stream);
    FS_CUDA_CHECK(cudaEventRecord(warmup_events.stop(0), stream));
  }
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  float first_ms = 0;
  FS_CUDA_CHECK(cudaEventElapsedTime(&first_ms, warmup_events.start(0), warmup_events.stop(0)));
  const int further_warmups = further_warmup_count(settings, first_ms);
  double estimate_ms = first_ms;
  for (int i = 0; i < further_warmups; ++i) {
    if (cold) flusher->flush(stream);
    const MeasurementRange range{range_name};
    FS_CUDA_CHECK(cudaEventRecord(warmup_events.start(1), stream));
    launch(stream);
    FS_CUDA_CHECK(cudaEventRecord(warmup_events.stop(1), stream));
  }
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (further_warmups > 0) {
    float last_ms = 0;
    FS_CUDA_CHECK(cudaEventElapsedTime(&last_ms, warmup_events.start(1), warmup_events.stop(1)));
    estimate_ms = last_ms;
  }

  const int timed_runs = timed_launch_count(settings, estimate_ms);
  const EventPairs events(timed_runs);
  for (int i = 0; i < timed_runs; ++i) {
    if (cold) flusher->flush(stream);
    const MeasurementRange range{range_name};
    FS_CUDA_CHECK(cudaEventRecord(events.start(i), stream));
    launch(stream);
    FS_CUDA_CHECK(cudaEventRecord(events.stop(i), stream));
  }
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<double> samples(static_cast<std::size_t>(timed_runs));
  for (int i = 0; i < timed_runs; ++i) {
    float ms = 0;
    FS_CUDA_CHECK(cudaEventElapsedTime(&ms, events.start(i), events.stop(i)));
    samples[static_cast<std::size_t>(i)] = ms;
  }
  TimingStats stats = summarize_samples(std::move(samples));
  stats.sm_clock_mhz = sm_clock_under_load(launch, settings, stream, flusher, stats.median_ms);
  return stats;
}

}  // namespace flashscope
