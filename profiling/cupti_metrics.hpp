// Hardware metrics of one forward pass through the CUPTI Range Profiler and the Profiler Host API
// (CUDA 12.6+; docs/profiling.md). Auto ranges give one range per kernel (a user range around the
// launch where the driver lacks that combination); user replay repeats the launch once per pass,
// which is valid because an attention forward is idempotent (same inputs, output fully
// rewritten).
//
// Metric names are checked by the host API alone, which needs no GPU when given a chip name
// ("GH100"), so a typo fails before any measurement starts.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace flashscope {

namespace detail {
class CuptiHost;     // a Profiler Host API object (cupti_metrics.cpp)
class RangeSession;  // the range profiler enabled on a context (cupti_metrics.cpp)
}  // namespace detail

// gpu__time_duration.sum (ns), sm__cycles_elapsed.max, lts__t_sector_hit_rate.pct.
const std::vector<std::string>& default_metrics();

// A failed CUPTI call; the message names the call, file, line and CUPTI's own explanation.
class CuptiError : public std::runtime_error {
 public:
  CuptiError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }  // the CUptiResult

 private:
  int code_;
};

// One or more metric names the chip does not have; the message lists each with a suggestion.
class UnknownMetric : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Performance counters are restricted to administrators (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
// the driver's ERR_NVGPUCTRPERM). Timing works without them.
class CountersNotPermitted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How to allow counters for everyone, for the one warning a sweep prints.
std::string counters_permission_hint();

// Chips this CUPTI's host API knows ("GA100", "GH100", ...). Needs no GPU.
std::vector<std::string> supported_chips();

// Throws UnknownMetric (every unknown name, each with the closest known metric where one is near)
// or CuptiError. Needs no GPU.
void validate_metric_names(const std::string& chip_name, const std::vector<std::string>& metrics);

// Replay passes the metrics need on `chip_name`. Needs no GPU.
std::size_t metric_pass_count(const std::string& chip_name,
                              const std::vector<std::string>& metrics);

// CUPTI's chip name of a CUDA device ("GH100"); needs the driver but no context.
std::string device_chip_name(int device);

struct KernelMetrics {
  std::map<std::string, double> values;  // of the longest kernel the launch enqueued
  std::string kernel_name;       // CUPTI's range name for that kernel (mangled), or "forward"
  std::size_t kernel_count = 0;  // kernels the launch enqueued (0 when ranges are whole launches)
  std::size_t passes = 0;
};

// How ranges are drawn: one per kernel (CUPTI_AutoRange), or one around the whole launch
// (CUPTI_UserRange) on drivers that do not combine auto ranges with user replay.
enum class RangeMode { per_kernel, whole_launch };

// Collects `metrics` for launches on the current context of `device`. The range profiler stays
// enabled on the context from construction until end_session() or destruction: enabling it costs
// about as much as a whole collection of a short kernel, so a sweep enables it once. Enabled but
// not started, it does not touch other launches (tests/profiling/test_profiler_gpu.cpp checks
// that event timings agree with and without it).
class KernelProfiler {
 public:
  // Throws CountersNotPermitted, UnknownMetric or CuptiError.
  KernelProfiler(int device, std::vector<std::string> metrics);
  ~KernelProfiler();
  KernelProfiler(const KernelProfiler&) = delete;
  KernelProfiler& operator=(const KernelProfiler&) = delete;

  const std::string& chip_name() const { return chip_name_; }
  std::size_t passes() const { return passes_; }
  const std::vector<std::string>& metrics() const { return metrics_; }
  RangeMode range_mode() const { return range_mode_; }

  // Per pass: before_pass() (e.g. the cold-L2 flush), then the profiled launch(), which enqueues
  // one forward on `stream`. Counters run only between this call's start and stop of each pass.
  // Throws CountersNotPermitted or CuptiError; after a throw the next call starts a new session.
  KernelMetrics collect(const std::function<void()>& before_pass,
                        const std::function<void()>& launch, cudaStream_t stream);

  // As above with `launches` back-to-back launches per pass (after one before_pass()), one
  // KernelMetrics each: one collection's set-up, passes and decode serve them all. They must
  // enqueue the same kernels each time, at most kMaxLaunchesPerCollection launches and 64 kernels
  // in all.
  static constexpr int kMaxLaunchesPerCollection = 16;
  std::vector<KernelMetrics> collect(const std::function<void()>& before_pass,
                                     const std::function<void()>& launch, cudaStream_t stream,
                                     int launches);

  // Disables the range profiler on the context; the next collect() enables it again.
  void end_session();

  // False once the driver refused to reconfigure a session: each collection then enables its own.
  bool reuses_session() const { return reuse_session_; }

 private:
  std::vector<KernelMetrics> collect_in_session(const std::function<void()>& before_pass,
                                                const std::function<void()>& launch,
                                                cudaStream_t stream, int launches);

  int device_;
  std::vector<std::string> metrics_;
  std::string chip_name_;
  std::vector<unsigned char> counter_availability_;
  std::vector<unsigned char> config_image_;
  std::size_t passes_ = 0;
  RangeMode range_mode_ = RangeMode::per_kernel;
  std::unique_ptr<detail::CuptiHost> host_;
  std::unique_ptr<detail::RangeSession> session_;
  bool reuse_session_ = true;
};

}  // namespace flashscope
