// Clock, power and throttling of the measuring GPU while a cell's timed launches run, sampled
// through NVML every few milliseconds by a background thread (docs/profiling.md, "Interleaved
// measurement and intervals"). NVML is reached through dlopen("libnvidia-ml.so.1"): nothing links
// NVML or libcuda, so a binary built with this still starts on a machine without a driver, where
// the sampler reports "NVML unavailable: <why>" and yields no values.
//
// The CUDA device is matched to its NVML device by UUID (cudaDeviceProp::uuid, the spelling of
// nvidia-smi -L), falling back to the PCI bus id: both name the physical GPU, so the match holds
// whatever CUDA_VISIBLE_DEVICES renumbered (NVML's own indices ignore that variable, and are
// never used here).
//
// Per sample: the SM clock (nvmlDeviceGetClockInfo, NVML_CLOCK_SM), the power draw (the
// instantaneous NVML_FI_DEV_POWER_INSTANT field where the driver has it, else
// nvmlDeviceGetPowerUsage, which on Ampere and later is a 1 s average: the summary says which),
// the GPU temperature (NVML_TEMPERATURE_GPU) and the clocks event ("throttle") reasons
// (nvmlDeviceGetCurrentClocksEventReasons, or the older ...ThrottleReasons). The enforced power
// limit is read once. Values are in the summary only when at least one sample had them.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flashscope::measurement {

// The subset of nvml.h the sampler uses, with NVML's C types (this project does not include
// nvml.h: it is not part of every CUDA installation).
namespace nvml {
using Return = int;  // nvmlReturn_t
struct DeviceOpaque;
using Device = DeviceOpaque*;  // nvmlDevice_t

inline constexpr Return kSuccess = 0;                // NVML_SUCCESS
inline constexpr Return kErrorNotSupported = 3;      // NVML_ERROR_NOT_SUPPORTED
inline constexpr Return kErrorNotFound = 6;          // NVML_ERROR_NOT_FOUND
inline constexpr Return kErrorDriverNotLoaded = 9;   // NVML_ERROR_DRIVER_NOT_LOADED
inline constexpr int kClockSm = 1;                   // NVML_CLOCK_SM (nvmlClockType_t)
inline constexpr int kTemperatureGpu = 0;            // NVML_TEMPERATURE_GPU
inline constexpr unsigned kFieldPowerInstant = 186;  // NVML_FI_DEV_POWER_INSTANT, mW

// nvmlValueType_t
inline constexpr int kValueDouble = 0;
inline constexpr int kValueUnsignedInt = 1;
inline constexpr int kValueUnsignedLong = 2;
inline constexpr int kValueUnsignedLongLong = 3;
inline constexpr int kValueSignedLongLong = 4;
inline constexpr int kValueSignedInt = 5;
inline constexpr int kValueUnsignedShort = 6;

union Value {  // nvmlValue_t
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  int siVal;
  unsigned short usVal;
};

struct FieldValue {  // nvmlFieldValue_t
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;  // nvmlValueType_t
  Return nvmlReturn;
  Value value;
};

// nvmlClocksEventReasons (the older nvmlClocksThrottleReason* have the same bits).
inline constexpr std::uint64_t kReasonGpuIdle = 0x1;
inline constexpr std::uint64_t kReasonApplicationsClocksSetting = 0x2;
inline constexpr std::uint64_t kReasonSwPowerCap = 0x4;
inline constexpr std::uint64_t kReasonHwSlowdown = 0x8;
inline constexpr std::uint64_t kReasonSyncBoost = 0x10;
inline constexpr std::uint64_t kReasonSwThermalSlowdown = 0x20;
inline constexpr std::uint64_t kReasonHwThermalSlowdown = 0x40;
inline constexpr std::uint64_t kReasonHwPowerBrakeSlowdown = 0x80;
inline constexpr std::uint64_t kReasonDisplayClockSetting = 0x100;
}  // namespace nvml

// The NVML entry points the sampler calls, as dlsym returns them. load_nvml() fills one from
// libnvidia-ml.so.1; tests fill one with fakes. Required: init, shutdown, error_string,
// handle_by_uuid, clock_info, power_usage, temperature, clocks_event_reasons; the others may be
// null (no PCI fallback, no power limit, no instantaneous power).
struct NvmlFunctions {
  nvml::Return (*init)() = nullptr;                                            // nvmlInit_v2
  nvml::Return (*shutdown)() = nullptr;                                        // nvmlShutdown
  const char* (*error_string)(nvml::Return) = nullptr;                         // nvmlErrorString
  nvml::Return (*handle_by_uuid)(const char*, nvml::Device*) = nullptr;        // ...GetHandleByUUID
  nvml::Return (*handle_by_pci_bus_id)(const char*, nvml::Device*) = nullptr;  // ..._v2
  nvml::Return (*clock_info)(nvml::Device, int, unsigned int*) = nullptr;      // ...GetClockInfo
  nvml::Return (*power_usage)(nvml::Device, unsigned int*) = nullptr;          // mW
  nvml::Return (*enforced_power_limit)(nvml::Device, unsigned int*) = nullptr;  // mW
  nvml::Return (*temperature)(nvml::Device, int, unsigned int*) = nullptr;      // degrees C
  // nvmlDeviceGetCurrentClocksEventReasons, or nvmlDeviceGetCurrentClocksThrottleReasons on a
  // driver older than R535.
  nvml::Return (*clocks_event_reasons)(nvml::Device, unsigned long long*) = nullptr;
  nvml::Return (*field_values)(nvml::Device, int, nvml::FieldValue*) = nullptr;
};

// The NVML of this machine, loaded once per process and never unloaded. Empty with the reason
// (dlerror's text, or the missing symbol) when it cannot be loaded.
struct LoadedNvml {
  std::optional<NvmlFunctions> functions;
  std::string error;
};
const LoadedNvml& load_nvml();

// Which GPU to sample.
struct NvmlDeviceKey {
  std::string uuid;        // "GPU-8e5b7a0c-..." (cudaDeviceProp::uuid as nvidia-smi -L spells it)
  std::string pci_bus_id;  // "0000:18:00.0" (cudaDeviceGetPCIBusId); may be empty
};
// The key of CUDA device `cuda_device` of this process (after CUDA_VISIBLE_DEVICES), from the
// CUDA runtime; creates no context. Throws std::runtime_error when CUDA cannot describe it.
NvmlDeviceKey nvml_device_key(int cuda_device);

// One sample; each value is empty when NVML did not give it.
struct NvmlSample {
  double seconds = 0;  // since the sampler started
  std::optional<unsigned> sm_clock_mhz;
  std::optional<double> power_w;
  std::optional<unsigned> temperature_c;
  std::optional<std::uint64_t> reasons;  // clocks event reason bits
};

// The names of the reason bits, in bit order: "idle", "applications clocks", "power cap",
// "HW slowdown", "sync boost", "SW thermal", "HW thermal", "HW power brake", "display clocks";
// an unknown bit as "0x400".
std::vector<std::string> clocks_event_reason_names(std::uint64_t reasons);
// The reasons that mean the clock was held down by power or heat (power cap, HW slowdown, SW and
// HW thermal, HW power brake): a row measured under any of these says so in its warnings.
inline constexpr std::uint64_t kThrottleReasons =
    nvml::kReasonSwPowerCap | nvml::kReasonHwSlowdown | nvml::kReasonSwThermalSlowdown |
    nvml::kReasonHwThermalSlowdown | nvml::kReasonHwPowerBrakeSlowdown;

struct NvmlSummary {
  int samples = 0;
  double seconds = 0;  // from the first sample to the last
  std::optional<unsigned> sm_clock_min_mhz, sm_clock_median_mhz, sm_clock_max_mhz;
  std::optional<double> power_mean_w, power_max_w;
  std::optional<double> power_limit_w;  // enforced power limit
  bool power_instantaneous = false;     // power from NVML_FI_DEV_POWER_INSTANT, not a 1 s average
  std::optional<unsigned> temperature_max_c;
  std::uint64_t reasons_seen = 0;  // OR of every sample's reasons
  bool reasons_known = false;      // at least one sample had them

  bool throttled() const { return (reasons_seen & kThrottleReasons) != 0; }
  std::vector<std::string> reason_names() const { return clocks_event_reason_names(reasons_seen); }
  // One line: "SM clock 1650..1755 MHz (median 1710), power 652 W mean, 701 W max of a 700 W
  // limit (instantaneous), 68 C max, clocks held by: power cap; 120 samples over 0.61 s".
  std::string text() const;
  // For a row's warnings when throttled(): "measured under power cap (SM clock 1650..1755 MHz)";
  // empty otherwise.
  std::string warning() const;
};

// Median of the clocks, mean and max of the power, max of the temperature, OR of the reasons.
NvmlSummary summarize_nvml_samples(const std::vector<NvmlSample>& samples,
                                   std::optional<double> power_limit_w, bool power_instantaneous);

class NvmlSampler {
 public:
  static constexpr std::chrono::milliseconds kDefaultPeriod{5};

  // This machine's NVML (load_nvml()). Never throws for a missing library, driver or device:
  // available() is then false and unavailable_reason() says why.
  explicit NvmlSampler(const NvmlDeviceKey& device,
                       std::chrono::microseconds period = kDefaultPeriod);
  // Any function table (tests' fakes).
  NvmlSampler(const NvmlFunctions& functions, const NvmlDeviceKey& device,
              std::chrono::microseconds period = kDefaultPeriod);
  ~NvmlSampler();  // stops a running sampling thread, shuts NVML down
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  bool available() const;
  // "NVML unavailable: libnvidia-ml.so.1: cannot open shared object file: ..." / "...:
  // nvmlInit_v2: Driver Not Loaded" / "...: no NVML device with UUID GPU-... or PCI bus id ...".
  const std::string& unavailable_reason() const;

  // Takes a sample, then samples once per period in a background thread. Does nothing
  // when unavailable. Throws std::logic_error when already running.
  void start();
  // Stops the thread after a last sample and summarises the samples since start(); an empty
  // summary when unavailable or not started.
  NvmlSummary stop();
  bool running() const;
  // Takes one sample now, on the calling thread (seconds = 0 when not running).
  NvmlSample sample_now();
  // The samples of the last start()..stop(), for a closer look.
  std::vector<NvmlSample> last_samples() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace flashscope::measurement
