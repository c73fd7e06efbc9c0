#include "profiling/ceilings/ceilings.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/common/build_info.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/device_buffer.hpp"
#include "profiling/ceilings/ceiling_kernels.hpp"
#include "profiling/device.hpp"
#include "profiling/measurement/nvtx_ranges.hpp"
#include "profiling/results/source_state.hpp"
#include "profiling/sweep/sweep_parent.hpp"
#include "profiling/sweep/sweep_worker.hpp"

namespace flashscope {

namespace {

// Iterations per launch at work_scale 1: about 5 ms of tensor-core work on an H100 SXM.
constexpr int kMmaSyncIterations = 8192;
constexpr int kWgmmaIterations = 2048;
// About 5 ms on an H100 SXM too: 16 ex2 per clock per SM, 128 shared-memory bytes per clock per
// SM (the documented rates of compute capability 8.0 and 9.0).
constexpr int kEx2Iterations = 8192;
constexpr int kSmemIterations = 4096;

// Upper bounds per SM and clock that no sm_80..sm_90 device reaches (twice the documented ex2
// rate of 16 per clock, and 32 for f16x2 counted per value; 10 % over the 128 bytes per clock of
// shared memory), taken at the device's peak clock: a result above one is a timing or counting
// error, and fails the row.
constexpr double kEx2F32PerClockBound = 32;
constexpr double kEx2F16x2PerClockBound = 64;
constexpr double kSmemBytesPerClockBound = 128 * 1.1;
// How close to the fixed point x* = 2^(-x*) the chains must end: ex2.approx.f32 is good to
// about 2^-22 relative; f16 steps are 2^-11 near 0.64.
constexpr double kEx2F32Tolerance = 1e-4;
constexpr double kEx2F16x2Tolerance = 4e-3;

// What every row of one `explorer peak` shares: the device and the run.
struct Measurement {
  DeviceDescription device;
  std::string run_id;
  std::optional<int> locked_sm_clock_mhz;
};

ResultRow identity_row(const std::string& benchmark, std::optional<DType> dtype,
                       const Measurement& measurement) {
  const DeviceDescription& device = measurement.device;
  const std::string& run_id = measurement.run_id;
  ResultRow row;
  row.subject = RowSubject::ceiling(benchmark, dtype);
  // A ceiling computes no attention problem: its shape columns are 0.
  row.problem = multi_head_problem(dtype.value_or(DType::FP16), /*batch=*/0, /*seq_len=*/0,
                                   /*heads=*/0, /*d_head=*/0);
  row.verdict = Verdict::unchecked;
  row.device = device.name;
  // Which GPU of a multi-GPU host, as sweep rows say it (docs/csv-schema.md): ceilings of two
  // GPUs of one model are two measurements.
  row.device_index = device.index;
  row.device_uuid = device.uuid;
  row.cache_mode = "warm";
  row.git_commit = std::string(source_state().commit);
  row.git_dirty = source_state().dirty;
  row.host = host_name();
  row.run_id = run_id;
  row.locked_sm_clock_mhz = measurement.locked_sm_clock_mhz;
  return row;
}

void fill_timing(ResultRow& row, const TimingStats& stats) {
  row.runs = static_cast<int>(stats.samples_ms.size());
  row.median_ms = stats.median_ms;
  row.min_ms = stats.min_ms;
  row.max_ms = stats.max_ms;
  row.sm_clock_mhz = stats.sm_clock_mhz;
}

// A tensor-core row: TFLOP/s from the work and the median; the verdict from the accumulators,
// which must all hold `expected` exactly.
void finish_tensor_row(ResultRow& row, const TimingStats& stats, double flops,
                       const std::vector<float>& accumulators, float expected) {
  fill_timing(row, stats);
  row.tflops = flops / (stats.median_ms * 1e9);
  row.seed_attn_tflops = row.tflops;
  double worst = 0;
  for (const float value : accumulators)
    worst = std::max(worst, std::fabs(static_cast<double>(value) - expected));
  row.max_error = worst;
  row.verdict = worst == 0 ? Verdict::pass : Verdict::fail;
}

std::string dtype_column(DType dtype) {
  return std::string(dtype_lower_name(dtype));
}

TimingStats time_benchmark(const std::string& name, const std::function<void(cudaStream_t)>& launch,
                           const CeilingOptions& options, cudaStream_t stream) {
  const MeasurementRangeName range_name{std::string(kCeilingStepPrefix) + name};
  return time_launches(launch, options.timing, stream, nullptr, range_name);
}

// SMs x the blocks that fit on one: a single full wave, so no SM idles through a tail.
int full_wave(const DeviceDescription& device, int blocks_per_sm) {
  if (blocks_per_sm < 0) FS_CUDA_CHECK(static_cast<cudaError_t>(-blocks_per_sm));
  if (blocks_per_sm == 0)
    throw CudaError(cudaErrorInvalidConfiguration, "no block of the benchmark fits on an SM");
  return device.sm_count * blocks_per_sm;
}

ResultRow measure_mma_sync(DType dtype, const Measurement& measurement,
                           const CeilingOptions& options, cudaStream_t stream) {
  const DeviceDescription& device = measurement.device;
  ResultRow row = identity_row("mma.sync", dtype, measurement);
  const int blocks = full_wave(device, ceilings::mma_sync_blocks_per_sm(dtype));
  const int iterations = std::max(1, static_cast<int>(kMmaSyncIterations * options.work_scale));
  DeviceVector<float> out(static_cast<std::size_t>(blocks) * ceilings::kMmaSyncThreads);
  const TimingStats stats = time_benchmark(
      "mma.sync " + dtype_column(dtype),
      [&](cudaStream_t s) {
        FS_CUDA_CHECK(ceilings::launch_mma_sync(dtype, blocks, iterations, out.get(), s));
      },
      options, stream);
  finish_tensor_row(row, stats, ceilings::mma_sync_flops(blocks, iterations), out.copy_to_host(),
                    ceilings::mma_sync_expected_accumulator(iterations));
  return row;
}

ResultRow measure_wgmma(DType dtype, const Measurement& measurement, const CeilingOptions& options,
                        cudaStream_t stream) {
  const DeviceDescription& device = measurement.device;
  ResultRow row = identity_row("wgmma", dtype, measurement);
  if (device.compute_capability != 90) {
    row.status = RowStatus::skipped("wgmma needs compute capability 9.0 (this device has " +
                                    std::to_string(device.compute_capability / 10) + "." +
                                    std::to_string(device.compute_capability % 10) + ")");
    return row;
  }
  if (!ceilings::wgmma_compiled(stream)) {
    row.status =
        RowStatus::skipped("this binary has no sm_90a code (built for CUDA architectures " +
                           std::string(build_info().cuda_architectures) + "; add 90a-real)");
    return row;
  }
  const int blocks = full_wave(device, ceilings::wgmma_blocks_per_sm(dtype));
  const int iterations = std::max(1, static_cast<int>(kWgmmaIterations * options.work_scale));
  DeviceVector<float> out(static_cast<std::size_t>(blocks) * ceilings::kWgmmaThreads);
  DeviceVector<int> executed(1);
  const TimingStats stats = time_benchmark(
      "wgmma " + dtype_column(dtype),
      [&](cudaStream_t s) {
        FS_CUDA_CHECK(
            ceilings::launch_wgmma(dtype, blocks, iterations, out.get(), executed.get(), s));
      },
      options, stream);
  finish_tensor_row(row, stats, ceilings::wgmma_flops(blocks, iterations), out.copy_to_host(),
                    ceilings::wgmma_expected_accumulator(iterations));
  return row;
}

// 16-byte words of a buffer 8x the L2 and at least 1 GiB, of which the copy needs two and some
// room is left: at most a third of the free memory each.
std::size_t stream_words(const DeviceDescription& device, double work_scale) {
  std::size_t free_bytes = 0, total_bytes = 0;
  FS_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const double wanted = std::max(8.0 * device.l2_bytes, double(1ull << 30)) * work_scale;
  const double bytes = std::min(wanted, free_bytes / 3.0);
  return std::max<std::size_t>(1, static_cast<std::size_t>(bytes / sizeof(uint4)));
}

constexpr unsigned kFillByte = 0x01;
constexpr unsigned long long kFillWord = 0x01010101ull;  // every 32-bit lane of the fill

std::vector<ResultRow> measure_hbm(const Measurement& measurement, const CeilingOptions& options,
                                   cudaStream_t stream) {
  const DeviceDescription& device = measurement.device;
  const std::size_t words = stream_words(device, options.work_scale);
  const int blocks = full_wave(device, ceilings::hbm_blocks_per_sm());
  DeviceVector<uint4> source(words);
  DeviceVector<uint4> destination(words);
  DeviceVector<unsigned long long> sums(static_cast<std::size_t>(blocks) *
                                        ceilings::kStreamThreads);
  FS_CUDA_CHECK(cudaMemset(source.get(), kFillByte, words * sizeof(uint4)));
  FS_CUDA_CHECK(cudaMemset(destination.get(), 0, words * sizeof(uint4)));
  const double bytes = static_cast<double>(words) * sizeof(uint4);

  std::vector<ResultRow> rows;
  {
    ResultRow row = identity_row("hbm.read", std::nullopt, measurement);
    const TimingStats stats = time_benchmark(
        "hbm.read",
        [&](cudaStream_t s) {
          FS_CUDA_CHECK(ceilings::launch_hbm_read(source.get(), words, blocks, sums.get(), s));
        },
        options, stream);
    fill_timing(row, stats);
    row.gbytes_per_s = bytes / (stats.median_ms * 1e6);
    unsigned long long total = 0;
    for (const unsigned long long sum : sums.copy_to_host())
      total += sum;
    row.verdict = total == static_cast<unsigned long long>(words) * 4 * kFillWord ? Verdict::pass
                                                                                  : Verdict::fail;
    rows.push_back(row);
  }
  {
    ResultRow row = identity_row("hbm.copy", std::nullopt, measurement);
    const TimingStats stats = time_benchmark(
        "hbm.copy",
        [&](cudaStream_t s) {
          FS_CUDA_CHECK(
              ceilings::launch_hbm_copy(source.get(), destination.get(), words, blocks, s));
        },
        options, stream);
    fill_timing(row, stats);
    row.gbytes_per_s = 2 * bytes / (stats.median_ms * 1e6);
    // The destination started as zeros: its first, middle and last MiB must hold the fill now.
    const std::size_t sample = std::min<std::size_t>(words, (1u << 20) / sizeof(uint4));
    bool copied = true;
    for (const std::size_t offset : {std::size_t{0}, (words - sample) / 2, words - sample})
      for (const uint4& word : destination.copy_to_host(offset, sample))
        copied = copied && word.x == kFillWord && word.y == kFillWord && word.z == kFillWord &&
                 word.w == kFillWord;
    row.verdict = copied ? Verdict::pass : Verdict::fail;
    rows.push_back(row);
  }
  return rows;
}

// The rate per SM and per clock at the device's peak clock: a lower bound of the true figure,
// since the clock under load is at most the peak.
double per_sm_per_clock_at_peak(const DeviceDescription& device, double per_second) {
  return per_second / (static_cast<double>(device.sm_count) * device.peak_sm_clock_mhz * 1e6);
}

// ex2.approx throughput (MUFU): `tflops` holds 10^12 ex2 results per second (f16x2: two per
// instruction), dtype empty; `max_error` the largest distance of a chain from its fixed point.
ResultRow measure_ex2(bool half2, const Measurement& measurement, const CeilingOptions& options,
                      cudaStream_t stream) {
  const DeviceDescription& device = measurement.device;
  const std::string name = half2 ? "ex2.f16x2" : "ex2.f32";
  ResultRow row = identity_row(name, std::nullopt, measurement);
  const int blocks = full_wave(device, ceilings::ex2_blocks_per_sm(half2));
  const int iterations = std::max(1, static_cast<int>(kEx2Iterations * options.work_scale));
  DeviceVector<float> out(static_cast<std::size_t>(blocks) * ceilings::kEx2Threads);
  const TimingStats stats = time_benchmark(
      name,
      [&](cudaStream_t s) {
        FS_CUDA_CHECK(ceilings::launch_ex2(half2, blocks, iterations, out.get(), s));
      },
      options, stream);
  fill_timing(row, stats);
  const double per_second =
      ceilings::ex2_results(half2, blocks, iterations) / (stats.median_ms * 1e-3);
  row.tflops = per_second / 1e12;
  row.seed_attn_tflops = row.tflops;
  double worst = 0;
  for (const float deviation : out.copy_to_host())
    worst = std::max(worst, std::isnan(deviation) ? HUGE_VAL : static_cast<double>(deviation));
  row.max_error = worst;
  const bool converged = worst <= (half2 ? kEx2F16x2Tolerance : kEx2F32Tolerance);
  const bool plausible = per_sm_per_clock_at_peak(device, per_second) <=
                         (half2 ? kEx2F16x2PerClockBound : kEx2F32PerClockBound);
  row.verdict = converged && plausible ? Verdict::pass : Verdict::fail;
  return row;
}

// Shared-memory read bandwidth: `gbytes_per_s` holds the bytes read per second / 10^9.
ResultRow measure_smem(const Measurement& measurement, const CeilingOptions& options,
                       cudaStream_t stream) {
  const DeviceDescription& device = measurement.device;
  ResultRow row = identity_row("smem.read", std::nullopt, measurement);
  const int blocks = full_wave(device, ceilings::smem_blocks_per_sm());
  const int iterations = std::max(1, static_cast<int>(kSmemIterations * options.work_scale));
  DeviceVector<std::uint32_t> sums(static_cast<std::size_t>(blocks) * ceilings::kSmemThreads);
  const TimingStats stats = time_benchmark(
      "smem.read",
      [&](cudaStream_t s) {
        FS_CUDA_CHECK(ceilings::launch_smem_read(blocks, iterations, sums.get(), s));
      },
      options, stream);
  fill_timing(row, stats);
  const double per_second = ceilings::smem_bytes(blocks, iterations) / (stats.median_ms * 1e-3);
  row.gbytes_per_s = per_second / 1e9;
  bool summed = true;
  const std::vector<std::uint32_t> host = sums.copy_to_host();
  for (std::size_t i = 0; i < host.size(); ++i)
    summed = summed && host[i] == ceilings::smem_expected_sum(
                                      static_cast<int>(i % ceilings::kSmemThreads), iterations);
  const bool plausible = per_sm_per_clock_at_peak(device, per_second) <= kSmemBytesPerClockBound;
  row.verdict = summed && plausible ? Verdict::pass : Verdict::fail;
  return row;
}

// Runs one benchmark; a CUDA error becomes a fault row for each row it would have produced.
template <typename Measure>
void run_guarded(std::vector<ResultRow>& rows, const std::vector<ResultRow>& identities,
                 const std::function<void(const ResultRow&)>& on_row, Measure&& measure) {
  std::vector<ResultRow> measured;
  try {
    measured = measure();
  } catch (const CudaError& error) {
    measured = identities;
    for (ResultRow& row : measured)
      row.status = RowStatus::fault(error.what());
  }
  for (const ResultRow& row : measured) {
    if (on_row) on_row(row);
    rows.push_back(row);
  }
}

}  // namespace

const std::vector<std::string>& ceiling_benchmarks() {
  static const std::vector<std::string> names = {"mma.sync", "wgmma", "hbm", "ex2", "smem"};
  return names;
}

std::string ceiling_benchmark_list() {
  std::string list;
  for (const std::string& name : ceiling_benchmarks())
    list += (list.empty() ? "" : ", ") + name;
  return list;
}

void validate_ceiling_options(const CeilingOptions& options) {
  validate_timing_settings(options.timing);
  if (options.benchmarks.empty()) throw std::invalid_argument("no benchmark to run");
  for (const std::string& name : options.benchmarks)
    if (std::find(ceiling_benchmarks().begin(), ceiling_benchmarks().end(), name) ==
        ceiling_benchmarks().end())
      throw std::invalid_argument("'" + name + "' is not a benchmark (" + ceiling_benchmark_list() +
                                  ")");
  if (options.dtypes.empty()) throw std::invalid_argument("no dtype to measure");
  if (!(options.work_scale > 0) || options.work_scale > 16)
    throw std::invalid_argument("work_scale must be in (0, 16]");
  if (options.locked_sm_clock_mhz && *options.locked_sm_clock_mhz <= 0)
    throw std::invalid_argument("locked_sm_clock_mhz must be a positive clock");
}

std::vector<ResultRow> measure_ceilings(const CeilingOptions& options,
                                        const std::function<void(const ResultRow&)>& on_row) {
  validate_ceiling_options(options);
  const Measurement measurement{describe_device(options.device),
                                options.run_id.empty() ? default_run_id() : options.run_id,
                                options.locked_sm_clock_mhz};
  const DeviceDescription& device = measurement.device;
  activate_device(options.device);
  const CudaStream stream;
  const auto wanted = [&](const char* name) {
    return std::find(options.benchmarks.begin(), options.benchmarks.end(), name) !=
           options.benchmarks.end();
  };

  std::vector<ResultRow> rows;
  for (const char* family : {"mma.sync", "wgmma"}) {
    if (!wanted(family)) continue;
    for (const DType dtype : options.dtypes) {
      run_guarded(rows, {identity_row(family, dtype, measurement)}, on_row, [&] {
        return std::vector<ResultRow>{
            std::string(family) == "mma.sync"
                ? measure_mma_sync(dtype, measurement, options, stream.get())
                : measure_wgmma(dtype, measurement, options, stream.get())};
      });
    }
  }
  if (wanted("hbm"))
    run_guarded(rows,
                {identity_row("hbm.read", std::nullopt, measurement),
                 identity_row("hbm.copy", std::nullopt, measurement)},
                on_row, [&] { return measure_hbm(measurement, options, stream.get()); });
  if (wanted("ex2"))
    for (const bool half2 : {false, true})
      run_guarded(
          rows, {identity_row(half2 ? "ex2.f16x2" : "ex2.f32", std::nullopt, measurement)}, on_row,
          [&] {
            return std::vector<ResultRow>{measure_ex2(half2, measurement, options, stream.get())};
          });
  if (wanted("smem"))
    run_guarded(rows, {identity_row("smem.read", std::nullopt, measurement)}, on_row, [&] {
      return std::vector<ResultRow>{measure_smem(measurement, options, stream.get())};
    });
  return rows;
}

}  // namespace flashscope
