// The NVML sampler (profiling/measurement/nvml_sampler.hpp) over a fake NVML function table:
// finding the device by UUID or PCI bus id, every reason it can be unavailable, one sample's
// values (instantaneous or averaged power), the background thread, the summary and its text.
// The last cases look at this machine's NVML, which may be absent. No GPU.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "profiling/measurement/nvml_sampler.hpp"

using namespace flashscope::measurement;

namespace {

// The fake device's state; the functions below read it.
struct FakeNvml {
  nvml::Return init_status = nvml::kSuccess;
  std::string uuid = "GPU-11111111-2222-3333-4444-555555555555";
  std::string pci = "0000:18:00.0";
  std::vector<unsigned> clocks = {1755};
  std::vector<unsigned long long> reasons = {0};
  unsigned power_mw = 650000;
  unsigned instant_mw = 690000;
  bool instant_supported = true;
  unsigned limit_mw = 700000;
  unsigned temperature = 65;
  int clock_calls = 0, reason_calls = 0, shutdowns = 0, inits = 0;
};
FakeNvml g_fake;
nvml::DeviceOpaque* const kHandle = reinterpret_cast<nvml::DeviceOpaque*>(0x1234);

nvml::Return fake_init() {
  ++g_fake.inits;
  return g_fake.init_status;
}
nvml::Return fake_shutdown() {
  ++g_fake.shutdowns;
  return nvml::kSuccess;
}
const char* fake_error_string(nvml::Return status) {
  switch (status) {
    case nvml::kSuccess:
      return "Success";
    case nvml::kErrorNotFound:
      return "Not Found";
    case nvml::kErrorDriverNotLoaded:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}
nvml::Return fake_by_uuid(const char* uuid, nvml::Device* device) {
  if (g_fake.uuid != uuid) return nvml::kErrorNotFound;
  *device = kHandle;
  return nvml::kSuccess;
}
nvml::Return fake_by_pci(const char* pci, nvml::Device* device) {
  if (g_fake.pci != pci) return nvml::kErrorNotFound;
  *device = kHandle;
  return nvml::kSuccess;
}
nvml::Return fake_clock(nvml::Device device, int type, unsigned* mhz) {
  if (device != kHandle || type != nvml::kClockSm) return nvml::kErrorNotSupported;
  *mhz = g_fake.clocks[g_fake.clock_calls++ % g_fake.clocks.size()];
  return nvml::kSuccess;
}
nvml::Return fake_power(nvml::Device device, unsigned* mw) {
  if (device != kHandle) return nvml::kErrorNotSupported;
  *mw = g_fake.power_mw;
  return nvml::kSuccess;
}
nvml::Return fake_limit(nvml::Device device, unsigned* mw) {
  if (device != kHandle) return nvml::kErrorNotSupported;
  *mw = g_fake.limit_mw;
  return nvml::kSuccess;
}
nvml::Return fake_temperature(nvml::Device device, int sensor, unsigned* celsius) {
  if (device != kHandle || sensor != nvml::kTemperatureGpu) return nvml::kErrorNotSupported;
  *celsius = g_fake.temperature;
  return nvml::kSuccess;
}
nvml::Return fake_reasons(nvml::Device device, unsigned long long* reasons) {
  if (device != kHandle) return nvml::kErrorNotSupported;
  *reasons = g_fake.reasons[g_fake.reason_calls++ % g_fake.reasons.size()];
  return nvml::kSuccess;
}
nvml::Return fake_fields(nvml::Device device, int count, nvml::FieldValue* values) {
  if (device != kHandle || count != 1) return nvml::kErrorNotSupported;
  if (values[0].fieldId != nvml::kFieldPowerInstant || !g_fake.instant_supported) {
    values[0].nvmlReturn = nvml::kErrorNotSupported;
    return nvml::kSuccess;  // as NVML does: the call succeeds, the field says why not
  }
  values[0].nvmlReturn = nvml::kSuccess;
  values[0].valueType = nvml::kValueUnsignedInt;
  values[0].value.uiVal = g_fake.instant_mw;
  return nvml::kSuccess;
}

NvmlFunctions fake_table() {
  NvmlFunctions f;
  f.init = fake_init;
  f.shutdown = fake_shutdown;
  f.error_string = fake_error_string;
  f.handle_by_uuid = fake_by_uuid;
  f.handle_by_pci_bus_id = fake_by_pci;
  f.clock_info = fake_clock;
  f.power_usage = fake_power;
  f.enforced_power_limit = fake_limit;
  f.temperature = fake_temperature;
  f.clocks_event_reasons = fake_reasons;
  f.field_values = fake_fields;
  return f;
}

const NvmlDeviceKey kKey{"GPU-11111111-2222-3333-4444-555555555555", "0000:18:00.0"};

}  // namespace

TEST_CASE("the device is found by UUID, else by PCI bus id") {
  g_fake = {};
  {
    NvmlSampler sampler(fake_table(), kKey);
    CHECK(sampler.available());
    CHECK(sampler.unavailable_reason().empty());
  }
  CHECK(g_fake.shutdowns == 1);  // every successful init is shut down

  g_fake = {};
  g_fake.uuid = "GPU-other";  // e.g. a MIG instance: the PCI bus id still finds the board
  {
    NvmlSampler sampler(fake_table(), kKey);
    CHECK(sampler.available());
  }
  g_fake = {};
  g_fake.uuid = "GPU-other";
  g_fake.pci = "0000:3b:00.0";
  {
    NvmlSampler sampler(fake_table(), kKey);
    CHECK_FALSE(sampler.available());
    CHECK(sampler.unavailable_reason() ==
          "NVML unavailable: no NVML device with UUID GPU-11111111-2222-3333-4444-555555555555 "
          "(Not Found) or PCI bus id 0000:18:00.0 (Not Found)");
    sampler.start();  // a no-op when unavailable
    CHECK_FALSE(sampler.running());
    CHECK(sampler.stop().samples == 0);
  }
  CHECK(g_fake.shutdowns == 1);
}

TEST_CASE("a driver that does not load, or a table that lacks an entry, is a clean reason") {
  g_fake = {};
  g_fake.init_status = nvml::kErrorDriverNotLoaded;
  {
    NvmlSampler sampler(fake_table(), kKey);
    CHECK_FALSE(sampler.available());
    CHECK(sampler.unavailable_reason() == "NVML unavailable: nvmlInit_v2: Driver Not Loaded");
    CHECK_FALSE(sampler.sample_now().sm_clock_mhz);
  }
  CHECK(g_fake.shutdowns == 0);  // no shutdown after a failed init

  g_fake = {};
  NvmlFunctions partial = fake_table();
  partial.temperature = nullptr;
  NvmlSampler sampler(partial, kKey);
  CHECK_FALSE(sampler.available());
  CHECK(sampler.unavailable_reason() ==
        "NVML unavailable: the function table lacks a required entry");
  CHECK(g_fake.inits == 0);
}

TEST_CASE("one sample: clock, power, temperature and reasons") {
  g_fake = {};
  g_fake.clocks = {1680};
  g_fake.reasons = {nvml::kReasonSwPowerCap};
  {
    NvmlSampler sampler(fake_table(), kKey);
    const NvmlSample sample = sampler.sample_now();
    CHECK(sample.sm_clock_mhz == 1680u);
    REQUIRE(sample.power_w);
    CHECK(*sample.power_w == doctest::Approx(690.0));  // the instantaneous field
    CHECK(sample.temperature_c == 65u);
    CHECK(sample.reasons == nvml::kReasonSwPowerCap);
  }
  // Without the instantaneous field: nvmlDeviceGetPowerUsage's average.
  g_fake = {};
  g_fake.instant_supported = false;
  {
    NvmlSampler sampler(fake_table(), kKey);
    const NvmlSample sample = sampler.sample_now();
    REQUIRE(sample.power_w);
    CHECK(*sample.power_w == doctest::Approx(650.0));
    sampler.start();
    const NvmlSummary summary = sampler.stop();
    CHECK_FALSE(summary.power_instantaneous);
    CHECK(summary.text().find("(NVML's 1 s average)") != std::string::npos);
  }
  g_fake = {};
  NvmlFunctions no_fields = fake_table();
  no_fields.field_values = nullptr;
  no_fields.enforced_power_limit = nullptr;
  NvmlSampler sampler(no_fields, kKey);
  CHECK(*sampler.sample_now().power_w == doctest::Approx(650.0));
  sampler.start();
  const NvmlSummary summary = sampler.stop();
  CHECK_FALSE(summary.power_limit_w);
}

TEST_CASE("reason bits have names") {
  CHECK(clocks_event_reason_names(0).empty());
  CHECK(
      clocks_event_reason_names(nvml::kReasonSwPowerCap | nvml::kReasonHwThermalSlowdown | 0x400) ==
      std::vector<std::string>{"power cap", "HW thermal", "0x400"});
  CHECK(clocks_event_reason_names(0x1ff) ==
        std::vector<std::string>{"idle", "applications clocks", "power cap", "HW slowdown",
                                 "sync boost", "SW thermal", "HW thermal", "HW power brake",
                                 "display clocks"});
}

TEST_CASE("samples are summarised") {
  std::vector<NvmlSample> samples(4);
  const unsigned clocks[] = {1755, 1650, 1710, 1980};
  const double power[] = {690, 701, 650, 700};
  const unsigned temperatures[] = {64, 66, 68, 67};
  const std::uint64_t reasons[] = {0, nvml::kReasonSwPowerCap, nvml::kReasonGpuIdle, 0};
  for (int i = 0; i < 4; ++i) {
    samples[i].seconds = 0.1 + 0.2 * i;
    samples[i].sm_clock_mhz = clocks[i];
    samples[i].power_w = power[i];
    samples[i].temperature_c = temperatures[i];
    samples[i].reasons = reasons[i];
  }
  samples[2].power_w.reset();  // a sample NVML did not answer counts for nothing
  const NvmlSummary summary = summarize_nvml_samples(samples, 700.0, true);
  CHECK(summary.samples == 4);
  CHECK(summary.seconds == doctest::Approx(0.6));
  CHECK(summary.sm_clock_min_mhz == 1650u);
  CHECK(summary.sm_clock_max_mhz == 1980u);
  CHECK(summary.sm_clock_median_mhz == 1733u);  // (1710 + 1755) / 2 = 1732.5, rounded
  CHECK(*summary.power_mean_w == doctest::Approx((690 + 701 + 700) / 3.0));
  CHECK(*summary.power_max_w == doctest::Approx(701));
  CHECK(summary.temperature_max_c == 68u);
  CHECK(summary.reasons_seen == (nvml::kReasonSwPowerCap | nvml::kReasonGpuIdle));
  CHECK(summary.throttled());
  CHECK(summary.text() ==
        "SM clock 1650..1980 MHz (median 1733), power 697 W mean, 701 W max of a 700 W limit "
        "(instantaneous), 68 C max, clocks held by: idle, power cap; 4 samples over 0.60 s");
  CHECK(summary.warning() == "measured under power cap (SM clock 1650..1980 MHz)");

  // Idle alone is not throttling.
  samples[1].reasons = 0;
  const NvmlSummary idle = summarize_nvml_samples(samples, std::nullopt, false);
  CHECK_FALSE(idle.throttled());
  CHECK(idle.warning().empty());
  CHECK(idle.text() ==
        "SM clock 1650..1980 MHz (median 1733), power 697 W mean, 701 W max (NVML's 1 s "
        "average), 68 C max, clocks held by: idle; 4 samples over 0.60 s");

  // Nothing known.
  std::vector<NvmlSample> bare(1);
  const NvmlSummary empty = summarize_nvml_samples(bare, std::nullopt, false);
  CHECK(empty.text() == "1 sample over 0.00 s");
  CHECK_FALSE(empty.reasons_known);
  CHECK(summarize_nvml_samples({}, std::nullopt, false).text() == "no NVML samples");
}

TEST_CASE("the background thread samples until stopped") {
  g_fake = {};
  g_fake.clocks = {1755, 1700, 1650};
  g_fake.reasons = {0, 0, nvml::kReasonSwPowerCap};
  NvmlSampler sampler(fake_table(), kKey, std::chrono::milliseconds(1));
  REQUIRE(sampler.available());
  sampler.start();
  CHECK(sampler.running());
  CHECK_THROWS_AS(sampler.start(), std::logic_error);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const NvmlSummary summary = sampler.stop();
  CHECK_FALSE(sampler.running());
  CHECK(summary.samples >= 3);  // at least the first, one more and the last
  CHECK(summary.seconds > 0.01);
  CHECK(summary.sm_clock_min_mhz == 1650u);
  CHECK(summary.sm_clock_max_mhz == 1755u);
  CHECK(summary.throttled());
  CHECK(*summary.power_limit_w == doctest::Approx(700));
  CHECK(summary.power_instantaneous);
  const std::vector<NvmlSample> samples = sampler.last_samples();
  CHECK(static_cast<int>(samples.size()) == summary.samples);
  for (std::size_t i = 1; i < samples.size(); ++i)
    CHECK(samples[i].seconds >= samples[i - 1].seconds);

  // Start again: a fresh set of samples.
  sampler.start();
  const NvmlSummary again = sampler.stop();
  CHECK(again.samples >= 2);
}

TEST_CASE("a sampler left running is stopped by its destructor") {
  g_fake = {};
  {
    NvmlSampler sampler(fake_table(), kKey, std::chrono::milliseconds(1));
    sampler.start();
  }
  CHECK(g_fake.shutdowns == 1);
}

TEST_CASE("this machine's NVML: available, or unavailable with the reason") {
  const LoadedNvml& loaded = load_nvml();
  CHECK(&loaded == &load_nvml());  // loaded once
  NvmlSampler sampler(NvmlDeviceKey{"GPU-00000000-0000-0000-0000-000000000000", ""});
  if (!loaded.functions) {
    CHECK_FALSE(sampler.available());
    CHECK(sampler.unavailable_reason().starts_with("NVML unavailable: "));
    CHECK(sampler.unavailable_reason().find(loaded.error) != std::string::npos);
    MESSAGE(sampler.unavailable_reason());
  } else {
    // A UUID no GPU has: found by nothing (or NVML itself cannot start here).
    CHECK_FALSE(sampler.available());
    CHECK(sampler.unavailable_reason().starts_with("NVML unavailable: "));
  }
}
