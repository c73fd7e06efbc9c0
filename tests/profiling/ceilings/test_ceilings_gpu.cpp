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
  REQUIRE(rows.size() == 6);  // mma.sync and wgmma in fp16 and bf16, hbm.read, hbm.copy
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
    if (row.subject.text() == "peak:hbm.read" || row.subject.text() == "peak:hbm.copy") {
      CHECK_FALSE(row.problem.dtype);
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
}

TEST_CASE("bad options are rejected before any measurement") {
  CeilingOptions options;
  options.benchmarks = {"tma"};
  CHECK_THROWS_WITH(measure_ceilings(options), doctest::Contains("'tma' is not a benchmark"));
  options.benchmarks = {"hbm"};
  options.work_scale = 0;
  CHECK_THROWS_WITH(measure_ceilings(options), doctest::Contains("work_scale"));
}
