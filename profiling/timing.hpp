// Kernel timing with CUDA events: warm-up launches, then one event pair around each of N timed
// launches, summarised as median, min and max. N adapts to the kernel's duration (as nvbench's
// minimum time does): short kernels get the full count, long ones stop at a GPU-time target,
// where the median of fewer samples is already as stable. In "cold" mode a memset evicts L2 before
// every launch (outside the events); "warm" launches back to back. The SM clock is sampled
// alongside three extra launches right after the timed ones, so every number is labelled with the
// clock it ran at.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/device_buffer.hpp"
#include "profiling/measurement/nvtx_ranges.hpp"

namespace flashscope {

enum class CacheMode { warm, cold };
std::string_view cache_mode_name(CacheMode mode);  // "warm" / "cold"
std::optional<CacheMode> cache_mode_from_string(std::string_view text);

struct TimingSettings {
  int warmup_runs = 10;     // at most; fewer once they cover half of target_ms (at least 2)
  int timed_runs = 30;      // at most
  int min_timed_runs = 10;  // at least (never more than timed_runs)
  double target_ms = 200;   // timed launches stop once they cover this; 0: always timed_runs
  CacheMode cache_mode = CacheMode::warm;
};

// The timed launches for a kernel that takes about `estimate_ms`:
// clamp(ceil(target_ms / estimate_ms), min(min_timed_runs, timed_runs), timed_runs), or
// timed_runs when target_ms is 0.
int timed_launch_count(const TimingSettings& settings, double estimate_ms);

// The warm-up launches after the first, which gives the estimate:
// clamp(ceil(target_ms / 2 / estimate_ms), min(2, warmup_runs), warmup_runs) - 1, or
// warmup_runs - 1 when target_ms is 0.
int further_warmup_count(const TimingSettings& settings, double estimate_ms);

struct TimingStats {
  std::vector<double> samples_ms;  // in launch order
  double median_ms = 0;            // mean of the two middle samples for an even count
  double min_ms = 0;
  double max_ms = 0;
  int sm_clock_mhz = 0;  // median SmClockProbe sample taken under the same load
};

// Throws std::invalid_argument on an empty sample list.
TimingStats summarize_samples(std::vector<double> samples_ms);

// Evicts L2 by writing a buffer twice the L2 size (cudaDevAttrL2CacheSize): twice, because
// Hopper's L2 is two partitions that may each hold a copy of a line.
class L2Flusher {
 public:
  explicit L2Flusher(int device);

  void flush(cudaStream_t stream);
  std::size_t bytes() const { return buffer_.bytes(); }

 private:
  DeviceBuffer buffer_;
};

// Enqueues exactly one forward pass on the stream; throws (CudaError) if the launch fails.
using LaunchFunction = std::function<void(cudaStream_t)>;

// "up to 10 warm-up + 10..30 timed launches (target 200 ms)", for logs.
std::string timing_summary(const TimingSettings& settings);

// Throws std::invalid_argument naming the setting at fault.
void validate_timing_settings(const TimingSettings& settings);

// Runs the warm-up launches (the first one timed for an estimate of the duration), then
// timed_launch_count() timed ones, each inside an NVTX range named `range_name` of the flashscope
// domain. TimingStats::samples_ms.size() is the count actually timed. `flusher` is required in cold
// mode and ignored in warm mode.
TimingStats time_launches(const LaunchFunction& launch, const TimingSettings& settings,
                          cudaStream_t stream, L2Flusher* flusher,
                          const MeasurementRangeName& range_name);

// The SM clock measured on the device: a one-thread kernel counts clock64() cycles while
// %globaltimer advances by `spin_ns`. time_launches runs it on a second stream *alongside* three
// extra, untimed launches after the timed ones, so the sample is taken under the load being
// measured. That matters: on a power-capped H200 the clock under sustained attention load is
// several percent below the one an isolated launch (or a probe between launches) sees, because
// the clock recovers within microseconds once the load stops. cudaDevAttrClockRate is only the
// peak.
class SmClockProbe {
 public:
  explicit SmClockProbe(int samples);
  ~SmClockProbe();
  SmClockProbe(const SmClockProbe&) = delete;
  SmClockProbe& operator=(const SmClockProbe&) = delete;

  // Enqueues sample `index`.
  void record(int index, std::uint64_t spin_ns, cudaStream_t stream);
  int median_mhz(int recorded, cudaStream_t stream) const;  // synchronises `stream`

 private:
  int samples_;
  std::uint64_t* device_samples_ = nullptr;  // cycles, ns per sample
};

}  // namespace flashscope
