#include "profiling/measurement/nvml_sampler.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace flashscope::measurement {

namespace {

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

template <typename Function>
bool bind(void* library, const char* name, Function& target) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) return false;
  target = reinterpret_cast<Function>(symbol);
  return true;
}

LoadedNvml load_nvml_once() {
  LoadedNvml loaded;
  dlerror();
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    loaded.error = why ? why : "libnvidia-ml.so.1 could not be loaded";
    return loaded;
  }
  NvmlFunctions f;
  const std::pair<const char*, bool> required[] = {
      {"nvmlInit_v2", bind(library, "nvmlInit_v2", f.init)},
      {"nvmlShutdown", bind(library, "nvmlShutdown", f.shutdown)},
      {"nvmlErrorString", bind(library, "nvmlErrorString", f.error_string)},
      {"nvmlDeviceGetHandleByUUID", bind(library, "nvmlDeviceGetHandleByUUID", f.handle_by_uuid)},
      {"nvmlDeviceGetClockInfo", bind(library, "nvmlDeviceGetClockInfo", f.clock_info)},
      {"nvmlDeviceGetPowerUsage", bind(library, "nvmlDeviceGetPowerUsage", f.power_usage)},
      {"nvmlDeviceGetTemperature", bind(library, "nvmlDeviceGetTemperature", f.temperature)},
      {"nvmlDeviceGetCurrentClocksEventReasons or ...ThrottleReasons",
       bind(library, "nvmlDeviceGetCurrentClocksEventReasons", f.clocks_event_reasons) ||
           bind(library, "nvmlDeviceGetCurrentClocksThrottleReasons", f.clocks_event_reasons)},
  };
  for (const auto& [name, found] : required)
    if (!found) {
      loaded.error = std::string("libnvidia-ml.so.1 lacks ") + name;
      return loaded;  // the library stays loaded: harmless, and dlclose of NVML is not needed
    }
  bind(library, "nvmlDeviceGetHandleByPciBusId_v2", f.handle_by_pci_bus_id);
  bind(library, "nvmlDeviceGetEnforcedPowerLimit", f.enforced_power_limit);
  bind(library, "nvmlDeviceGetFieldValues", f.field_values);
  loaded.functions = f;
  return loaded;
}

std::optional<double> field_as_double(const nvml::FieldValue& field) {
  if (field.nvmlReturn != nvml::kSuccess) return std::nullopt;
  switch (field.valueType) {
    case nvml::kValueDouble:
      return field.value.dVal;
    case nvml::kValueUnsignedInt:
      return static_cast<double>(field.value.uiVal);
    case nvml::kValueUnsignedLong:
      return static_cast<double>(field.value.ulVal);
    case nvml::kValueUnsignedLongLong:
      return static_cast<double>(field.value.ullVal);
    case nvml::kValueSignedLongLong:
      return static_cast<double>(field.value.sllVal);
    case nvml::kValueSignedInt:
      return static_cast<double>(field.value.siVal);
    case nvml::kValueUnsignedShort:
      return static_cast<double>(field.value.usVal);
    default:
      return std::nullopt;
  }
}

}  // namespace

const LoadedNvml& load_nvml() {
  static const LoadedNvml loaded = load_nvml_once();
  return loaded;
}

NvmlDeviceKey nvml_device_key(int cuda_device) {
  cudaDeviceProp properties{};
  const cudaError_t status = cudaGetDeviceProperties(&properties, cuda_device);
  if (status != cudaSuccess)
    throw std::runtime_error("nvml_device_key: cudaGetDeviceProperties(" +
                             std::to_string(cuda_device) +
                             ") failed: " + cudaGetErrorString(status));
  static constexpr char kHex[] = "0123456789abcdef";
  NvmlDeviceKey key;
  key.uuid = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) key.uuid += '-';  // 8-4-4-4-12 hex digits
    const auto byte = static_cast<unsigned char>(properties.uuid.bytes[i]);
    key.uuid += kHex[byte >> 4];
    key.uuid += kHex[byte & 0xF];
  }
  char bus_id[32];
  std::snprintf(bus_id, sizeof bus_id, "%04x:%02x:%02x.0", properties.pciDomainID,
                properties.pciBusID, properties.pciDeviceID);
  key.pci_bus_id = bus_id;
  return key;
}

std::vector<std::string> clocks_event_reason_names(std::uint64_t reasons) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {nvml::kReasonGpuIdle, "idle"},
      {nvml::kReasonApplicationsClocksSetting, "applications clocks"},
      {nvml::kReasonSwPowerCap, "power cap"},
      {nvml::kReasonHwSlowdown, "HW slowdown"},
      {nvml::kReasonSyncBoost, "sync boost"},
      {nvml::kReasonSwThermalSlowdown, "SW thermal"},
      {nvml::kReasonHwThermalSlowdown, "HW thermal"},
      {nvml::kReasonHwPowerBrakeSlowdown, "HW power brake"},
      {nvml::kReasonDisplayClockSetting, "display clocks"},
  };
  std::vector<std::string> names;
  for (int bit = 0; bit < 64; ++bit) {
    const std::uint64_t mask = std::uint64_t{1} << bit;
    if (!(reasons & mask)) continue;
    const auto known = std::find_if(std::begin(kNames), std::end(kNames),
                                    [&](const auto& entry) { return entry.first == mask; });
    if (known != std::end(kNames)) {
      names.push_back(known->second);
    } else {
      char text[24];
      std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(mask));
      names.push_back(text);
    }
  }
  return names;
}

NvmlSummary summarize_nvml_samples(const std::vector<NvmlSample>& samples,
                                   std::optional<double> power_limit_w, bool power_instantaneous) {
  NvmlSummary summary;
  summary.samples = static_cast<int>(samples.size());
  summary.power_limit_w = power_limit_w;
  summary.power_instantaneous = power_instantaneous;
  if (samples.empty()) return summary;
  summary.seconds = samples.back().seconds - samples.front().seconds;
  std::vector<unsigned> clocks;
  double power_sum = 0;
  int power_count = 0;
  for (const NvmlSample& sample : samples) {
    if (sample.sm_clock_mhz) clocks.push_back(*sample.sm_clock_mhz);
    if (sample.power_w) {
      power_sum += *sample.power_w;
      ++power_count;
      summary.power_max_w =
          std::max(summary.power_max_w.value_or(*sample.power_w), *sample.power_w);
    }
    if (sample.temperature_c)
      summary.temperature_max_c = std::max(
          summary.temperature_max_c.value_or(*sample.temperature_c), *sample.temperature_c);
    if (sample.reasons) {
      summary.reasons_seen |= *sample.reasons;
      summary.reasons_known = true;
    }
  }
  if (power_count > 0) summary.power_mean_w = power_sum / power_count;
  if (!clocks.empty()) {
    std::sort(clocks.begin(), clocks.end());
    const std::size_t n = clocks.size();
    summary.sm_clock_min_mhz = clocks.front();
    summary.sm_clock_max_mhz = clocks.back();
    summary.sm_clock_median_mhz =
        n % 2 == 1 ? clocks[n / 2]
                   : static_cast<unsigned>(std::lround((clocks[n / 2 - 1] + clocks[n / 2]) / 2.0));
  }
  return summary;
}

std::string NvmlSummary::text() const {
  if (samples == 0) return "no NVML samples";
  std::vector<std::string> parts;
  if (sm_clock_median_mhz)
    parts.push_back("SM clock " + std::to_string(*sm_clock_min_mhz) + ".." +
                    std::to_string(*sm_clock_max_mhz) + " MHz (median " +
                    std::to_string(*sm_clock_median_mhz) + ")");
  if (power_mean_w) {
    std::string power =
        "power " + fixed(*power_mean_w, 0) + " W mean, " + fixed(*power_max_w, 0) + " W max";
    if (power_limit_w) power += " of a " + fixed(*power_limit_w, 0) + " W limit";
    power += power_instantaneous ? " (instantaneous)" : " (NVML's 1 s average)";
    parts.push_back(power);
  }
  if (temperature_max_c) parts.push_back(std::to_string(*temperature_max_c) + " C max");
  if (reasons_known) {
    const std::vector<std::string> names = reason_names();
    std::string reasons = "clocks held by: ";
    if (names.empty()) reasons += "nothing";
    for (std::size_t i = 0; i < names.size(); ++i)
      reasons += (i ? ", " : "") + names[i];
    parts.push_back(reasons);
  }
  std::string text;
  for (std::size_t i = 0; i < parts.size(); ++i)
    text += (i ? ", " : "") + parts[i];
  if (!text.empty()) text += "; ";
  return text + std::to_string(samples) + (samples == 1 ? " sample" : " samples") + " over " +
         fixed(seconds, 2) + " s";
}

std::string NvmlSummary::warning() const {
  if (!throttled()) return "";
  std::string names;
  for (const std::string& name : clocks_event_reason_names(reasons_seen & kThrottleReasons))
    names += (names.empty() ? "" : ", ") + name;
  std::string text = "measured under " + names;
  if (sm_clock_min_mhz)
    text += " (SM clock " + std::to_string(*sm_clock_min_mhz) + ".." +
            std::to_string(*sm_clock_max_mhz) + " MHz)";
  return text;
}

struct NvmlSampler::State {
  NvmlFunctions f;
  bool initialized = false;  // nvmlInit_v2 succeeded: shutdown owed
  nvml::Device device = nullptr;
  std::string unavailable;
  std::optional<double> power_limit_w;
  bool instantaneous = false;
  std::chrono::microseconds period{5000};

  mutable std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread thread;
  std::vector<NvmlSample> samples;
  std::chrono::steady_clock::time_point started;

  std::string error_text(nvml::Return status) const {
    const char* text = f.error_string ? f.error_string(status) : nullptr;
    return text ? std::string(text) : "NVML error " + std::to_string(status);
  }

  void open(const NvmlDeviceKey& key) {
    nvml::Return status = f.init();
    if (status != nvml::kSuccess) {
      unavailable = "NVML unavailable: nvmlInit_v2: " + error_text(status);
      return;
    }
    initialized = true;
    std::string tried;
    status = nvml::kErrorNotFound;
    if (!key.uuid.empty()) {
      status = f.handle_by_uuid(key.uuid.c_str(), &device);
      tried = "UUID " + key.uuid + " (" + error_text(status) + ")";
    }
    if (status != nvml::kSuccess && !key.pci_bus_id.empty() && f.handle_by_pci_bus_id) {
      status = f.handle_by_pci_bus_id(key.pci_bus_id.c_str(), &device);
      tried += (tried.empty() ? "" : " or ") + std::string("PCI bus id ") + key.pci_bus_id + " (" +
               error_text(status) + ")";
    }
    if (status != nvml::kSuccess) {
      device = nullptr;
      unavailable = "NVML unavailable: no NVML device with " +
                    (tried.empty() ? std::string("no UUID or PCI bus id given") : tried);
      return;
    }
    if (f.enforced_power_limit) {
      unsigned milliwatts = 0;
      if (f.enforced_power_limit(device, &milliwatts) == nvml::kSuccess && milliwatts > 0)
        power_limit_w = milliwatts / 1000.0;
    }
    if (f.field_values) {
      nvml::FieldValue field{};
      field.fieldId = nvml::kFieldPowerInstant;
      instantaneous =
          f.field_values(device, 1, &field) == nvml::kSuccess && field_as_double(field).has_value();
    }
  }

  NvmlSample take(double seconds) const {
    NvmlSample sample;
    sample.seconds = seconds;
    unsigned value = 0;
    if (f.clock_info(device, nvml::kClockSm, &value) == nvml::kSuccess) sample.sm_clock_mhz = value;
    if (instantaneous) {
      nvml::FieldValue field{};
      field.fieldId = nvml::kFieldPowerInstant;
      if (f.field_values(device, 1, &field) == nvml::kSuccess)
        if (const auto milliwatts = field_as_double(field)) sample.power_w = *milliwatts / 1000;
    } else if (f.power_usage(device, &value) == nvml::kSuccess) {
      sample.power_w = value / 1000.0;
    }
    if (f.temperature(device, nvml::kTemperatureGpu, &value) == nvml::kSuccess)
      sample.temperature_c = value;
    unsigned long long reasons = 0;
    if (f.clocks_event_reasons(device, &reasons) == nvml::kSuccess) sample.reasons = reasons;
    return sample;
  }

  double since_start() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }

  // The first sample is taken by start(), the last by stop(): one per period in between.
  void run() {
    std::unique_lock lock(mutex);
    for (;;) {
      if (wake.wait_for(lock, period, [this] { return stopping; })) return;
      lock.unlock();
      const NvmlSample sample = take(since_start());
      lock.lock();
      samples.push_back(sample);
    }
  }
};

NvmlSampler::NvmlSampler(const NvmlDeviceKey& device, std::chrono::microseconds period)
    : state_(std::make_unique<State>()) {
  state_->period = period;
  const LoadedNvml& loaded = load_nvml();
  if (!loaded.functions) {
    state_->unavailable = "NVML unavailable: " + loaded.error;
    return;
  }
  state_->f = *loaded.functions;
  state_->open(device);
}

NvmlSampler::NvmlSampler(const NvmlFunctions& functions, const NvmlDeviceKey& device,
                         std::chrono::microseconds period)
    : state_(std::make_unique<State>()) {
  state_->period = period;
  const NvmlFunctions& f = functions;
  if (!f.init || !f.shutdown || !f.handle_by_uuid || !f.clock_info || !f.power_usage ||
      !f.temperature || !f.clocks_event_reasons) {
    state_->unavailable = "NVML unavailable: the function table lacks a required entry";
    return;
  }
  state_->f = functions;
  state_->open(device);
}

NvmlSampler::~NvmlSampler() {
  if (running()) stop();
  if (state_->initialized) state_->f.shutdown();
}

bool NvmlSampler::available() const {
  return state_->unavailable.empty();
}

const std::string& NvmlSampler::unavailable_reason() const {
  return state_->unavailable;
}

bool NvmlSampler::running() const {
  return state_->thread.joinable();
}

void NvmlSampler::start() {
  if (!available()) return;
  if (running()) throw std::logic_error("NvmlSampler::start: already sampling");
  State& s = *state_;
  {
    const std::lock_guard lock(s.mutex);
    s.samples.clear();
    s.stopping = false;
    s.started = std::chrono::steady_clock::now();
    s.samples.push_back(s.take(0.0));
  }
  s.thread = std::thread([&s] { s.run(); });
}

NvmlSummary NvmlSampler::stop() {
  State& s = *state_;
  if (!running()) return summarize_nvml_samples({}, s.power_limit_w, s.instantaneous);
  {
    const std::lock_guard lock(s.mutex);
    s.stopping = true;
  }
  s.wake.notify_all();
  s.thread.join();
  const NvmlSample last = s.take(s.since_start());
  const std::lock_guard lock(s.mutex);
  s.samples.push_back(last);
  return summarize_nvml_samples(s.samples, s.power_limit_w, s.instantaneous);
}

NvmlSample NvmlSampler::sample_now() {
  if (!available()) return {};
  return state_->take(running() ? state_->since_start() : 0.0);
}

std::vector<NvmlSample> NvmlSampler::last_samples() const {
  const std::lock_guard lock(state_->mutex);
  return state_->samples;
}

}  // namespace flashscope::measurement
