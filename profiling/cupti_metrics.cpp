#include "profiling/cupti_metrics.hpp"

#include <cuda.h>  // CUcontext and CUresult types only: the driver is reached through the runtime
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <algorithm>
#include <mutex>

#include "kernels/common/cuda_check.hpp"

namespace flashscope {

namespace {

constexpr std::size_t kMaxRanges = 64;   // kernels one collection may profile
constexpr std::size_t kMaxPasses = 256;  // a guard against a replay that never completes
constexpr const char* kDurationMetric = "gpu__time_duration.sum";

std::string result_text(CUptiResult result) {
  const char* name = nullptr;
  const char* message = nullptr;
  std::string text;
  if (cuptiGetResultString(result, &name) == CUPTI_SUCCESS && name)
    text = name;
  else
    text = "CUptiResult " + std::to_string(static_cast<int>(result));
  if (cuptiGetErrorMessage(result, &message) == CUPTI_SUCCESS && message && *message)
    text += std::string(" (") + message + ")";
  return text;
}

[[noreturn]] void throw_cupti_error(CUptiResult result, const char* call, const char* file,
                                    int line) {
  const std::string where = std::string(file) + ":" + std::to_string(line) + ": " + call +
                            " failed: " + result_text(result);
  if (result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    throw CountersNotPermitted(where + "; " + counters_permission_hint());
  throw CuptiError(static_cast<int>(result), where);
}

#define FS_CUPTI_CHECK(call)                                          \
  do {                                                                \
    const CUptiResult fs_cupti_status_ = (call);                      \
    if (fs_cupti_status_ != CUPTI_SUCCESS)                            \
      throw_cupti_error(fs_cupti_status_, #call, __FILE__, __LINE__); \
  } while (0)

// cuptiProfilerInitialize once per process (it is reference counted, but never needs undoing here).
void initialize_profiler_once() {
  static std::once_flag once;
  static CUptiResult status = CUPTI_SUCCESS;
  std::call_once(once, [] {
    CUpti_Profiler_Initialize_Params params{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    status = cuptiProfilerInitialize(&params);
  });
  if (status != CUPTI_SUCCESS)
    throw_cupti_error(status, "cuptiProfilerInitialize(&params)", __FILE__, __LINE__);
}

// The current context through the runtime's driver entry points: linking libcuda would keep the
// binary from starting on a machine without a driver.
CUcontext current_context() {
  using GetCurrent = CUresult (*)(CUcontext*);
  void* function = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  FS_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &function, CUDART_VERSION,
                                                 cudaEnableDefault, &query));
  if (query != cudaDriverEntryPointSuccess || function == nullptr)
    throw CuptiError(0, "the driver does not export cuCtxGetCurrent (query result " +
                            std::to_string(static_cast<int>(query)) + ")");
  CUcontext context = nullptr;
  const CUresult status = reinterpret_cast<GetCurrent>(function)(&context);
  if (status != CUDA_SUCCESS || context == nullptr)
    throw CuptiError(0, "cuCtxGetCurrent found no current context (CUresult " +
                            std::to_string(static_cast<int>(status)) +
                            "); activate the device first");
  return context;
}

std::vector<const char*> c_strings(const std::vector<std::string>& names) {
  std::vector<const char*> out;
  out.reserve(names.size());
  for (const std::string& name : names)
    out.push_back(name.c_str());
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

// ---- Host object ----------------------------------------------------------------------------

namespace detail {

class CuptiHost {
 public:
  CuptiHost(const std::string& chip, const unsigned char* counter_availability) {
    CUpti_Profiler_Host_Initialize_Params params{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    params.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    params.pChipName = chip.c_str();
    params.pCounterAvailabilityImage = counter_availability;
    FS_CUPTI_CHECK(cuptiProfilerHostInitialize(&params));
    object = params.pHostObject;
  }
  ~CuptiHost() {
    CUpti_Profiler_Host_Deinitialize_Params params{
        CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    params.pHostObject = object;
    cuptiProfilerHostDeinitialize(&params);
  }
  CuptiHost(const CuptiHost&) = delete;
  CuptiHost& operator=(const CuptiHost&) = delete;

  CUptiResult try_add_metrics(const std::vector<std::string>& metrics) {
    std::vector<const char*> names = c_strings(metrics);
    CUpti_Profiler_Host_ConfigAddMetrics_Params params{
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    params.pHostObject = object;
    params.ppMetricNames = names.data();
    params.numMetrics = names.size();
    return cuptiProfilerHostConfigAddMetrics(&params);
  }

  std::vector<unsigned char> config_image() {
    CUpti_Profiler_Host_GetConfigImageSize_Params size{
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = object;
    FS_CUPTI_CHECK(cuptiProfilerHostGetConfigImageSize(&size));
    std::vector<unsigned char> image(size.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params get{
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    get.pHostObject = object;
    get.configImageSize = image.size();
    get.pConfigImage = image.data();
    FS_CUPTI_CHECK(cuptiProfilerHostGetConfigImage(&get));
    return image;
  }

  std::vector<std::string> base_metrics() {
    std::vector<std::string> out;
    for (const CUpti_MetricType type :
         {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
      CUpti_Profiler_Host_GetBaseMetrics_Params params{
          CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
      params.pHostObject = object;
      params.metricType = type;
      if (cuptiProfilerHostGetBaseMetrics(&params) != CUPTI_SUCCESS) continue;
      for (std::size_t i = 0; i < params.numMetrics; ++i)
        if (params.ppMetricNames[i]) out.emplace_back(params.ppMetricNames[i]);
    }
    return out;
  }

  // The suffixes a base metric accepts (".sum", ".max", ".pct", ...), empty if it is unknown.
  std::vector<std::string> sub_metrics(const std::string& base) {
    CUpti_Profiler_Host_GetMetricProperties_Params properties{
        CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
    properties.pHostObject = object;
    properties.pMetricName = base.c_str();
    if (cuptiProfilerHostGetMetricProperties(&properties) != CUPTI_SUCCESS) return {};
    CUpti_Profiler_Host_GetSubMetrics_Params params{
        CUpti_Profiler_Host_GetSubMetrics_Params_STRUCT_SIZE};
    params.pHostObject = object;
    params.metricType = properties.metricType;
    params.pMetricName = base.c_str();
    if (cuptiProfilerHostGetSubMetrics(&params) != CUPTI_SUCCESS) return {};
    std::vector<std::string> out;
    for (std::size_t i = 0; i < params.numOfSubmetrics; ++i)
      if (params.ppSubMetrics[i]) out.emplace_back(params.ppSubMetrics[i]);
    return out;
  }

  CUpti_Profiler_Host_Object* object = nullptr;
};

}  // namespace detail

using detail::CuptiHost;

namespace {

std::size_t pass_count(std::vector<unsigned char>& config_image) {
  CUpti_Profiler_Host_GetNumOfPasses_Params params{
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  params.configImageSize = config_image.size();
  params.pConfigImage = config_image.data();
  FS_CUPTI_CHECK(cuptiProfilerHostGetNumOfPasses(&params));
  return params.numOfPasses;
}

// Why `metric` is rejected, with the nearest spelling the chip knows.
std::string explain_unknown_metric(CuptiHost& host, const std::string& metric,
                                   const std::vector<std::string>& base_metrics) {
  const std::string base = metric.substr(0, metric.find('.'));
  std::string text = "'" + metric + "'";
  if (std::find(base_metrics.begin(), base_metrics.end(), base) != base_metrics.end()) {
    std::vector<std::string> suffixes = host.sub_metrics(base);
    // Shortest first: the plain rollups (.sum, .max, ...) are what people mean.
    std::stable_sort(
        suffixes.begin(), suffixes.end(),
        [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
    text += ": '" + base + "' exists but not with this suffix";
    if (!suffixes.empty()) {
      text += "; valid forms include";
      for (std::size_t i = 0; i < suffixes.size() && i < 8; ++i)
        text += (i == 0 ? " " : ", ") + base + suffixes[i];
    }
    return text;
  }
  std::size_t best = std::string::npos;
  const std::string* nearest = nullptr;
  for (const std::string& candidate : base_metrics) {
    const std::size_t distance = edit_distance(base, candidate);
    if (distance < best) {
      best = distance;
      nearest = &candidate;
    }
  }
  if (nearest && best <= std::max<std::size_t>(3, base.size() / 4))
    text += " (did you mean '" + *nearest + metric.substr(base.size()) + "'?)";
  return text;
}

}  // namespace

// ---- Free functions ------------------------------------------------------------------------

const std::vector<std::string>& default_metrics() {
  static const std::vector<std::string> metrics = {kDurationMetric, "sm__cycles_elapsed.max",
                                                   "lts__t_sector_hit_rate.pct"};
  return metrics;
}

std::string counters_permission_hint() {
  return "GPU performance counters are restricted to administrators on this machine "
         "(ERR_NVGPUCTRPERM). Run as root, or allow all users: load the driver with "
         "NVreg_RestrictProfilingToAdminUsers=0 (e.g. `options nvidia "
         "NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d/, then reboot); see "
         "https://developer.nvidia.com/ERR_NVGPUCTRPERM";
}

std::vector<std::string> supported_chips() {
  CUpti_Profiler_Host_GetSupportedChips_Params params{
      CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE};
  FS_CUPTI_CHECK(cuptiProfilerHostGetSupportedChips(&params));
  std::vector<std::string> chips;
  for (std::size_t i = 0; i < params.numChips; ++i)
    chips.emplace_back(params.ppChipNames[i]);
  return chips;
}

void validate_metric_names(const std::string& chip_name, const std::vector<std::string>& metrics) {
  const std::vector<std::string> chips = supported_chips();
  if (std::find(chips.begin(), chips.end(), chip_name) == chips.end()) {
    std::string known;
    for (const std::string& chip : chips)
      known += (known.empty() ? "" : ", ") + chip;
    throw UnknownMetric("chip '" + chip_name + "' is not known to this CUPTI (known: " + known +
                        ")");
  }
  if (metrics.empty()) return;
  {
    CuptiHost all(chip_name, nullptr);
    if (all.try_add_metrics(metrics) == CUPTI_SUCCESS) return;
  }
  // Something was rejected: a fresh host object per name says which.
  std::vector<std::string> unknown;
  for (const std::string& metric : metrics) {
    CuptiHost one(chip_name, nullptr);
    if (one.try_add_metrics({metric}) != CUPTI_SUCCESS) unknown.push_back(metric);
  }
  if (unknown.empty()) {
    CuptiHost all(chip_name, nullptr);
    FS_CUPTI_CHECK(all.try_add_metrics(metrics));  // rejected together only: report CUPTI's reason
    return;
  }
  CuptiHost lookup(chip_name, nullptr);
  const std::vector<std::string> base_metrics = lookup.base_metrics();
  std::string message = unknown.size() == 1 ? "unknown metric for " : "unknown metrics for ";
  message += chip_name + ": ";
  for (std::size_t i = 0; i < unknown.size(); ++i)
    message += (i ? "; " : "") + explain_unknown_metric(lookup, unknown[i], base_metrics);
  std::string lower_chip = chip_name;
  for (char& c : lower_chip)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  message += ". `ncu --query-metrics --chip " + lower_chip + "` lists every metric.";
  throw UnknownMetric(message);
}

std::size_t metric_pass_count(const std::string& chip_name,
                              const std::vector<std::string>& metrics) {
  validate_metric_names(chip_name, metrics);
  CuptiHost host(chip_name, nullptr);
  FS_CUPTI_CHECK(host.try_add_metrics(metrics));
  std::vector<unsigned char> image = host.config_image();
  return pass_count(image);
}

std::string device_chip_name(int device) {
  initialize_profiler_once();
  CUpti_Device_GetChipName_Params params{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  params.deviceIndex = static_cast<std::size_t>(device);
  FS_CUPTI_CHECK(cuptiDeviceGetChipName(&params));
  return params.pChipName ? params.pChipName : "";
}

// ---- KernelProfiler --------------------------------------------------------------------------

namespace detail {

// The range profiler enabled on a context, with its counter-data image. Enabling costs far more
// than a collection (it sets up the counter hardware), so one session serves every collect() of a
// KernelProfiler; each collection re-initialises the counter data and sets the configuration again.
class RangeSession {
 public:
  RangeSession(CUcontext context, const std::vector<std::string>& metrics)
      : names_(c_strings(metrics)) {
    CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    enable.ctx = context;
    FS_CUPTI_CHECK(cuptiRangeProfilerEnable(&enable));
    object_ = enable.pRangeProfilerObject;

    CUpti_RangeProfiler_GetCounterDataSize_Params size{
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    size.pRangeProfilerObject = object_;
    size.pMetricNames = names_.data();
    size.numMetrics = names_.size();
    size.maxNumOfRanges = kMaxRanges;
    size.maxNumRangeTreeNodes = kMaxRanges;
    try {
      FS_CUPTI_CHECK(cuptiRangeProfilerGetCounterDataSize(&size));
    } catch (...) {
      disable();
      throw;
    }
    counter_data_.resize(size.counterDataSize);
  }
  ~RangeSession() { disable(); }
  RangeSession(const RangeSession&) = delete;
  RangeSession& operator=(const RangeSession&) = delete;

  // Empties the counter data and applies the configuration, ready for pass 0. User replay: we
  // repeat the launch once per pass, so no device memory is saved and restored.
  CUptiResult begin_collection(std::vector<unsigned char>& config_image,
                               CUpti_ProfilerRange range) {
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params initialize{
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    initialize.pRangeProfilerObject = object_;
    initialize.counterDataSize = counter_data_.size();
    initialize.pCounterData = counter_data_.data();
    if (const CUptiResult status = cuptiRangeProfilerCounterDataImageInitialize(&initialize);
        status != CUPTI_SUCCESS)
      return status;
    CUpti_RangeProfiler_SetConfig_Params config{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    config.pRangeProfilerObject = object_;
    config.configSize = config_image.size();
    config.pConfig = config_image.data();
    config.counterDataImageSize = counter_data_.size();
    config.pCounterDataImage = counter_data_.data();
    config.range = range;
    config.replayMode = CUPTI_UserReplay;
    config.maxRangesPerPass = kMaxRanges;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    return cuptiRangeProfilerSetConfig(&config);
  }

  CUpti_RangeProfiler_Object* object() const { return object_; }
  std::vector<std::uint8_t>& counter_data() { return counter_data_; }
  std::vector<const char*>& names() { return names_; }

 private:
  void disable() {
    if (!object_) return;
    CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    disable.pRangeProfilerObject = object_;
    cuptiRangeProfilerDisable(&disable);
    object_ = nullptr;
  }

  std::vector<const char*> names_;
  CUpti_RangeProfiler_Object* object_ = nullptr;
  std::vector<std::uint8_t> counter_data_;
};

}  // namespace detail

KernelProfiler::KernelProfiler(int device, std::vector<std::string> metrics)
    : device_(device), metrics_(std::move(metrics)) {
  if (metrics_.empty()) throw std::invalid_argument("KernelProfiler needs at least one metric");
  initialize_profiler_once();
  chip_name_ = device_chip_name(device_);
  validate_metric_names(chip_name_, metrics_);

  const CUcontext context = current_context();
  CUpti_Profiler_GetCounterAvailability_Params availability{
      CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  availability.ctx = context;
  FS_CUPTI_CHECK(cuptiProfilerGetCounterAvailability(&availability));
  counter_availability_.resize(availability.counterAvailabilityImageSize);
  availability.pCounterAvailabilityImage = counter_availability_.data();
  FS_CUPTI_CHECK(cuptiProfilerGetCounterAvailability(&availability));

  host_ = std::make_unique<CuptiHost>(chip_name_, counter_availability_.data());
  FS_CUPTI_CHECK(host_->try_add_metrics(metrics_));
  config_image_ = host_->config_image();
  passes_ = pass_count(config_image_);

  // A trial configuration surfaces a counter permission problem before any measurement, and
  // picks the range mode: auto ranges (one per kernel) where this driver supports them with
  // user replay, else one user range around the whole launch.
  session_ = std::make_unique<detail::RangeSession>(context, metrics_);
  if (session_->begin_collection(config_image_, CUPTI_AutoRange) == CUPTI_SUCCESS) {
    range_mode_ = RangeMode::per_kernel;
  } else {
    FS_CUPTI_CHECK(session_->begin_collection(config_image_, CUPTI_UserRange));
    range_mode_ = RangeMode::whole_launch;
  }
}

KernelProfiler::~KernelProfiler() = default;

void KernelProfiler::end_session() {
  session_.reset();
}

KernelMetrics KernelProfiler::collect(const std::function<void()>& before_pass,
                                      const std::function<void()>& launch, cudaStream_t stream) {
  return collect(before_pass, launch, stream, 1).front();
}

std::vector<KernelMetrics> KernelProfiler::collect(const std::function<void()>& before_pass,
                                                   const std::function<void()>& launch,
                                                   cudaStream_t stream, int launches) {
  if (launches < 1 || launches > kMaxLaunchesPerCollection)
    throw std::invalid_argument("KernelProfiler::collect: launches must be 1.." +
                                std::to_string(kMaxLaunchesPerCollection) + ", not " +
                                std::to_string(launches));
  try {
    std::vector<KernelMetrics> result = collect_in_session(before_pass, launch, stream, launches);
    if (!reuse_session_) session_.reset();
    return result;
  } catch (...) {
    // A collection that failed half way leaves the session in an unknown state: the next one
    // starts from a fresh session.
    session_.reset();
    throw;
  }
}

std::vector<KernelMetrics> KernelProfiler::collect_in_session(
    const std::function<void()>& before_pass, const std::function<void()>& launch,
    cudaStream_t stream, int launches) {
  const bool per_kernel = range_mode_ == RangeMode::per_kernel;
  const CUpti_ProfilerRange range = per_kernel ? CUPTI_AutoRange : CUPTI_UserRange;
  if (!session_) {
    session_ = std::make_unique<detail::RangeSession>(current_context(), metrics_);
    FS_CUPTI_CHECK(session_->begin_collection(config_image_, range));
  } else if (session_->begin_collection(config_image_, range) != CUPTI_SUCCESS) {
    // A driver that does not take a second configuration on one session: from here on every
    // collection enables its own.
    reuse_session_ = false;
    session_.reset();
    session_ = std::make_unique<detail::RangeSession>(current_context(), metrics_);
    FS_CUPTI_CHECK(session_->begin_collection(config_image_, range));
  }
  detail::RangeSession& session = *session_;

  std::size_t passes = 0;
  bool all_passes_submitted = false;
  while (!all_passes_submitted) {
    if (passes == kMaxPasses)
      throw CuptiError(
          0, "the range profiler asked for more than " + std::to_string(kMaxPasses) + " passes");
    before_pass();
    // Whatever before_pass enqueued must finish before the profiled window opens.
    FS_CUDA_CHECK(cudaStreamSynchronize(stream));
    CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    start.pRangeProfilerObject = session.object();
    FS_CUPTI_CHECK(cuptiRangeProfilerStart(&start));
    for (int i = 0; i < launches; ++i) {
      if (!per_kernel) {
        CUpti_RangeProfiler_PushRange_Params push{CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
        push.pRangeProfilerObject = session.object();
        push.pRangeName = "forward";
        FS_CUPTI_CHECK(cuptiRangeProfilerPushRange(&push));
      }
      launch();
      if (!per_kernel) {
        FS_CUDA_CHECK(cudaStreamSynchronize(stream));
        CUpti_RangeProfiler_PopRange_Params pop{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
        pop.pRangeProfilerObject = session.object();
        FS_CUPTI_CHECK(cuptiRangeProfilerPopRange(&pop));
      }
    }
    FS_CUDA_CHECK(cudaStreamSynchronize(stream));
    CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    stop.pRangeProfilerObject = session.object();
    FS_CUPTI_CHECK(cuptiRangeProfilerStop(&stop));
    all_passes_submitted = stop.isAllPassSubmitted != 0;
    ++passes;
  }

  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = session.object();
  FS_CUPTI_CHECK(cuptiRangeProfilerDecodeData(&decode));
  if (decode.numOfRangeDropped > 0)
    throw CuptiError(0, std::to_string(decode.numOfRangeDropped) +
                            " profiler ranges were dropped (the launches enqueued more than " +
                            std::to_string(kMaxRanges) + " kernels)");

  std::vector<std::uint8_t>& counter_data = session.counter_data();
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = counter_data.data();
  info.counterDataImageSize = counter_data.size();
  FS_CUPTI_CHECK(cuptiRangeProfilerGetCounterDataInfo(&info));
  const std::size_t count = static_cast<std::size_t>(launches);
  if (info.numTotalRanges == 0) throw CuptiError(0, "the profiled launches produced no range");
  if (info.numTotalRanges % count != 0)
    throw CuptiError(0, std::to_string(launches) + " identical launches produced " +
                            std::to_string(info.numTotalRanges) +
                            " ranges, which do not split evenly among them");
  // Ranges come in launch order: each launch owns the same number of consecutive ones.
  const std::size_t ranges_per_launch = info.numTotalRanges / count;

  const auto duration_at = static_cast<std::size_t>(
      std::find(metrics_.begin(), metrics_.end(), kDurationMetric) - metrics_.begin());
  std::vector<KernelMetrics> results(count);
  std::vector<double> values(metrics_.size());
  for (std::size_t index = 0; index < count; ++index) {
    KernelMetrics& result = results[index];
    result.passes = passes;
    result.kernel_count = per_kernel ? ranges_per_launch : 0;
    double longest = -1;
    for (std::size_t range = index * ranges_per_launch; range < (index + 1) * ranges_per_launch;
         ++range) {
      CUpti_Profiler_Host_EvaluateToGpuValues_Params evaluate{
          CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
      evaluate.pHostObject = host_->object;
      evaluate.pCounterDataImage = counter_data.data();
      evaluate.counterDataImageSize = counter_data.size();
      evaluate.rangeIndex = range;
      evaluate.ppMetricNames = session.names().data();
      evaluate.numMetrics = session.names().size();
      evaluate.pMetricValues = values.data();
      FS_CUPTI_CHECK(cuptiProfilerHostEvaluateToGpuValues(&evaluate));
      // With several kernels (a reference's helpers), report the one that dominates the time.
      const double duration = duration_at < values.size() ? values[duration_at] : 0.0;
      if (duration <= longest) continue;
      longest = duration;
      CUpti_RangeProfiler_CounterData_GetRangeInfo_Params range_info{
          CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
      range_info.pCounterDataImage = counter_data.data();
      range_info.counterDataImageSize = counter_data.size();
      range_info.rangeIndex = range;
      range_info.rangeDelimiter = "/";
      FS_CUPTI_CHECK(cuptiRangeProfilerCounterDataGetRangeInfo(&range_info));
      result.kernel_name = range_info.rangeName ? range_info.rangeName : "";
      result.values.clear();
      for (std::size_t m = 0; m < metrics_.size(); ++m)
        result.values[metrics_[m]] = values[m];
    }
  }
  return results;
}

}  // namespace flashscope
