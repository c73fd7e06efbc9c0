// `explorer peak`'s microbenchmarks on the device, at a small work scale: every ceiling is
// measured, checked and within what the device can do; wgmma is measured exactly where it can
// run (compute capability 9.0 and sm_90a code in this binary) and skipped, with the reason,
// elsewhere. Linked with the GPU test main, which reports "SKIPPED: no CUDA device (...)" when
// there is none.
#include <doctest/doctest.h>

#include <sstream>

#include "kernels/common/build_info.hpp"
#include "profiling/ceilings/ceilings.hpp"
#include "profiling/device.hpp"
#include "profiling/results/results.hpp"

using namespace flashscope;

TEST_CASE("every ceiling is measured, verified and below the device's bound") {
  CeilingOptions options;
  options.work_scale = 0.1;
  options.timing = TimingSettings{2, 5, 3, 20, CacheMode::warm};
  std::vector<ResultRow> streamed;
  const std::vector<ResultRow> rows =
      measure_ceilings(options, [&](const ResultRow& row) { streamed.push_back(row); });
  // mma.sync and wgmma in fp16 and bf16, hbm.read, hbm.copy, ex2.f32, ex2.f16x2, smem.read
  REQUIRE(rows.size() == 9);
  CHECK(streamed.size() == rows.size());

  const DeviceDescription device = describe_device(0);
  const double bound = tensor_peak_tflops_bound(device);
  const std::string arches(build_info().cuda_architectures);
  for (const ResultRow& row : rows) {
    INFO(row.subject.text() << " " << dtype_text(row) << ": " << row.status.text());
    CHECK(row.is_ceiling());
    CHECK(row.device == device.name);
    CHECK(row.device_index == device.index);
    CHECK(row.device_uuid == device.uuid);
    if (row.subject.text() == "peak:wgmma" &&
        (device.compute_capability != 90 || arches.find("90a") == std::string::npos)) {
      CHECK(row.status.text().starts_with("skipped: "));
      continue;
    }
    REQUIRE(row.status.ok());
    CHECK(row.verdict == Verdict::pass);
    CHECK(row.runs >= 3);
    CHECK(row.min_ms <= row.median_ms);
    CHECK(row.sm_clock_mhz > 0);
    // Rates per SM and clock, at the peak clock (a lower bound of the true per-clock rate).
    const double per_clock = device.sm_count * device.peak_sm_clock_mhz * 1e6;
    if (row.subject.text() == "peak:ex2.f32" || row.subject.text() == "peak:ex2.f16x2") {
      CHECK_FALSE(row_dtype(row));
      CHECK_FALSE(row.gbytes_per_s);
      REQUIRE(row.max_error);
      CHECK(*row.max_error < 4e-3);  // the chains sit at their fixed point
      const double ex2_per_clock = row.tflops * 1e12 / per_clock;
      CHECK(ex2_per_clock > 1);  // 16 (f32) on sm_80 and sm_90, at any clock above a tenth
      CHECK(ex2_per_clock <= (row.subject.text() == "peak:ex2.f32" ? 32 : 64));
    } else if (row.subject.text() == "peak:smem.read") {
      CHECK_FALSE(row_dtype(row));
      REQUIRE(row.gbytes_per_s);
      const double bytes_per_clock = *row.gbytes_per_s * 1e9 / per_clock;
      CHECK(bytes_per_clock > 8);
      CHECK(bytes_per_clock <= 128 * 1.1);
    } else if (row.subject.text() == "peak:hbm.read" || row.subject.text() == "peak:hbm.copy") {
      CHECK_FALSE(row_dtype(row));
      REQUIRE(row.gbytes_per_s);
      CHECK(*row.gbytes_per_s > 100);    // any HBM or GDDR device
      CHECK(*row.gbytes_per_s < 20000);  // beyond every GPU flashscope runs on
    } else {
      CHECK(row.tflops > 1);
      CHECK(row.tflops <= bound * 1.02);  // SMs x peak clock x 4096 FLOP/cycle, 2 % clock slack
    }
  }

  // The rows survive the CSV like sweep rows.
  std::stringstream csv;
  ResultsCsvWriter writer(csv);
  for (const ResultRow& row : rows)
    writer.write(row);
  const std::vector<ResultRow> read = read_results_csv(csv, "peak.csv");
  REQUIRE(read.size() == rows.size());
  CHECK(read[4].gbytes_per_s.has_value() == rows[4].gbytes_per_s.has_value());
  CHECK(read[6].subject.text() == "peak:ex2.f32");
  CHECK(read[6].tflops == doctest::Approx(rows[6].tflops).epsilon(1e-6));
  CHECK(read[8].subject.text() == "peak:smem.read");
}

TEST_CASE("ex2 and shared memory alone") {
  CeilingOptions options;
  options.work_scale = 0.05;
  options.timing = TimingSettings{2, 5, 3, 20, CacheMode::warm};
  options.benchmarks = {"smem", "ex2"};
  const std::vector<ResultRow> rows = measure_ceilings(options);
  REQUIRE(rows.size() == 3);  // in the fixed order: ex2.f32, ex2.f16x2, smem.read
  CHECK(rows[0].subject.text() == "peak:ex2.f32");
  CHECK(rows[1].subject.text() == "peak:ex2.f16x2");
  CHECK(rows[2].subject.text() == "peak:smem.read");
  for (const ResultRow& row : rows) {
    INFO(row.subject.text() << ": " << row.status.text());
    CHECK(row.status.ok());
    CHECK(row.verdict == Verdict::pass);
  }
}

TEST_CASE("bad options are rejected before any measurement") {
  CeilingOptions options;
  options.benchmarks = {"tma"};
  CHECK_THROWS_WITH(
      measure_ceilings(options),
      doctest::Contains("'tma' is not a benchmark (mma.sync, wgmma, hbm, ex2, smem)"));
  options.benchmarks = {"hbm"};
  options.work_scale = 0;
  CHECK_THROWS_WITH(measure_ceilings(options), doctest::Contains("work_scale"));
}
