// Interleaved measurement on the device (profiling/measurement/interleaved.hpp): the three launch
// patterns time one-thread spin kernels of known length (enqueue_idle_gap, %globaltimer), the
// per-round ratio of two of them comes out at their length ratio, a contender that cannot be
// captured makes a graph cell fall back to stream, and NVML (where the driver has it) samples the
// same GPU. Linked with the GPU test main, which reports "SKIPPED: no CUDA device (...)" when
// there is none.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/device_buffer.hpp"
#include "profiling/device.hpp"
#include "profiling/measurement/interleaved.hpp"
#include "profiling/measurement/nvml_sampler.hpp"
#include "tests/support/gpu_presence.hpp"

using namespace flashscope;
using namespace flashscope::measurement;

namespace {

Contender spin(const std::string& name, double microseconds) {
  return {name, [microseconds](cudaStream_t stream) {
            FS_CUDA_CHECK(enqueue_idle_gap(microseconds, stream));
          }};
}

InterleavedSettings short_run(LaunchPattern pattern) {
  InterleavedSettings settings;
  settings.pattern = pattern;
  settings.stopping = StoppingRule{0.01, 10, 60, 0.5};
  settings.warmup_ms = 2;
  return settings;
}

}  // namespace

TEST_CASE("every launch pattern times spin kernels of known length, and their ratio") {
  activate_device(0);
  const CudaStream stream;
  for (const LaunchPattern pattern :
       {LaunchPattern::stream, LaunchPattern::graph, LaunchPattern::gapped}) {
    INFO("pattern " << launch_pattern_name(pattern));
    InterleavedSettings settings = short_run(pattern);
    if (pattern == LaunchPattern::gapped) settings.gap_us = 20;
    const InterleavedResult result = measure_interleaved(
        {spin("spin 100 us", 100), spin("spin 300 us", 300)}, {{1, 0}}, settings, stream.get());
    MESSAGE(result.summary());
    CHECK(result.pattern.pattern == pattern);
    CHECK(result.pattern.note.empty());
    CHECK(result.rounds >= 10);
    CHECK(result.rounds <= 60);
    // A spin kernel lasts its length plus a launch of a few microseconds (more when the host
    // cannot keep up, which 100 us leaves time for).
    CHECK(result.contenders[0].time.median == doctest::Approx(0.100).epsilon(0.15));
    CHECK(result.contenders[1].time.median == doctest::Approx(0.300).epsilon(0.10));
    CHECK(result.contenders[0].launches_per_round == 20);  // 2 ms batches of ~0.1 ms
    REQUIRE(result.ratios.size() == 1);
    // pct = contender 0's time / contender 1's time * 100: about a third.
    CHECK(result.ratios[0].pct.median == doctest::Approx(100.0 / 3).epsilon(0.15));
    REQUIRE(result.ratios[0].pct.interval);
  }
}

TEST_CASE("a contender that cannot be captured makes the cell fall back to stream") {
  activate_device(0);
  const CudaStream stream;
  // Synchronising a stream that is being captured is not allowed: the capture fails.
  const Contender synchronising{"synchronising", [](cudaStream_t s) {
                                  FS_CUDA_CHECK(enqueue_idle_gap(50, s));
                                  FS_CUDA_CHECK(cudaStreamSynchronize(s));
                                }};
  const InterleavedResult result = measure_interleaved(
      {spin("spin 100 us", 100), synchronising}, {}, short_run(LaunchPattern::graph), stream.get());
  CHECK(result.pattern.pattern == LaunchPattern::stream);
  CHECK(result.pattern.note.find("graph capture failed for synchronising") != std::string::npos);
  CHECK(result.rounds >= 10);
  CHECK(result.contenders[0].time.median == doctest::Approx(0.100).epsilon(0.15));
  // The stream is usable afterwards.
  FS_CUDA_CHECK(enqueue_idle_gap(10, stream.get()));
  FS_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("a hook between launches (an L2 flush) is outside the timed region") {
  activate_device(0);
  const CudaStream stream;
  int hooks = 0;
  InterleavedSettings settings = short_run(LaunchPattern::stream);
  settings.launches_per_round = 4;
  settings.stopping = StoppingRule{0.5, 10, 10, 10};
  const InterleavedResult result = measure_interleaved(
      {spin("spin 100 us", 100)}, {}, settings, stream.get(), {}, [&hooks](cudaStream_t s) {
        ++hooks;
        FS_CUDA_CHECK(enqueue_idle_gap(400, s));  // a slow "flush": must not be counted
      });
  CHECK(result.pattern.pattern == LaunchPattern::gapped);
  CHECK(result.rounds == 10);
  CHECK(hooks >= 4 * 11);  // every launch of the warm-up round and the 10 timed ones
  CHECK(result.contenders[0].time.median == doctest::Approx(0.100).epsilon(0.15));
}

TEST_CASE("NVML samples the measuring GPU during the rounds") {
  activate_device(0);
  const NvmlDeviceKey key = nvml_device_key(0);
  CHECK(key.uuid == describe_device(0).uuid);
  NvmlSampler sampler(key, std::chrono::milliseconds(2));
  if (!sampler.available()) {
    testing::skip_test_case(sampler.unavailable_reason());
    return;
  }
  const CudaStream stream;
  InterleavedSettings settings = short_run(LaunchPattern::stream);
  // A fixed 150 rounds (min = max: a spin kernel of exact length meets any width target at
  // once), of 2 ms batches: about 0.3 s of rounds for the sampler to cover.
  settings.stopping = StoppingRule{0.001, 150, 150, 10.0};
  const InterleavedResult result =
      measure_interleaved({spin("spin 200 us", 200)}, {}, settings, stream.get(),
                          {[&] { sampler.start(); }, [&] { CHECK(sampler.running()); }});
  const NvmlSummary summary = sampler.stop();
  MESSAGE(summary.text());
  CHECK(result.rounds == 150);
  CHECK(result.seconds >= 0.25);
  CHECK(summary.samples >= 10);
  REQUIRE(summary.sm_clock_median_mhz);
  CHECK(*summary.sm_clock_min_mhz > 100);
  CHECK(*summary.sm_clock_max_mhz <=
        static_cast<unsigned>(describe_device(0).peak_sm_clock_mhz) + 50);
  CHECK(summary.reasons_known);
}
