// Reference drift: first and repeated reference passes of one run paired by shape, summarised
// per (run, reference, dtype); rows of other runs, seeds or passes never pair.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "profiling/results/baseline_drift.hpp"

using namespace flashscope;

namespace {

ResultRow reference(const std::string& name, int seq_len, int pass, double ms, double cycles,
                    int clock) {
  ResultRow row;
  row.subject = *RowSubject::from_text(name);
  row.problem.dtype = DType::FP16;
  row.problem.batch = 16;
  row.problem.heads = 16;
  row.problem.heads_kv = row.problem.heads;
  row.problem.seq_len = seq_len;
  row.runs = 30;
  row.median_ms = row.min_ms = row.max_ms = ms;
  row.tflops = 300;
  row.cycles = cycles;
  row.verdict = Verdict::pass;
  row.device = "NVIDIA H200";
  row.cache_mode = "warm";
  row.git_commit = "abc";
  row.host = "gpu-1";
  row.sm_clock_mhz = clock;
  row.reference_pass = pass;
  row.input_seed = 11;
  return row;
}

std::vector<const ResultRow*> pointers(const std::vector<ResultRow>& rows) {
  std::vector<const ResultRow*> out;
  for (const ResultRow& row : rows)
    out.push_back(&row);
  return out;
}

}  // namespace

TEST_CASE("a run is its host and commit, dirty state included") {
  ResultRow row = reference("fa2", 512, 1, 1, 1, 1);
  CHECK(run_label(row) == "gpu-1, abc");
  ResultRow dirty = row;
  dirty.git_dirty = true;
  CHECK(run_label(dirty) == "gpu-1, abc+dirty");
  CHECK(run_key(dirty) != run_key(row));
  ResultRow other_host = row;
  other_host.host = "gpu-2";
  CHECK(run_key(other_host) != run_key(row));
  ResultRow old = row;  // a file without the host column
  old.host.clear();
  CHECK(run_label(old) == "abc");
  // A sweep's run_id names it: two sweeps on one host and build are two runs.
  ResultRow first_sweep = row, second_sweep = row;
  first_sweep.run_id = "gpu-1 2026-11-21T06:45:03Z";
  second_sweep.run_id = "gpu-1 2026-11-21T07:35:40Z";
  CHECK(run_key(first_sweep) != run_key(second_sweep));
  CHECK(run_label(first_sweep) == "gpu-1 2026-11-21T06:45:03Z, abc");
  // A build stamped with a full hash (FLASHSCOPE_GIT_COMMIT) is labelled like git's short stamp.
  ResultRow full_hash = row;
  full_hash.git_commit = "ba3385c9ec4302aab35245d70639083a917091e6";
  CHECK(run_label(full_hash) == "gpu-1, ba3385c9ec43");
  CHECK(run_key(full_hash) != run_key(row));
}

TEST_CASE("repeated reference passes give the drift per reference and dtype") {
  std::vector<ResultRow> rows = {
      reference("fa2", 512, 1, 1.000, 1000, 1700),
      reference("fa2", 512, 2, 1.010, 1001, 1690),  // +1.0 % time, +0.1 % cycles
      reference("fa2", 4096, 1, 8.000, 8000, 1720),
      reference("fa2", 4096, 2, 7.960, 7996, 1730),  // -0.5 %, -0.05 %
      reference("fa2", 8192, 1, 16.00, 16000, 1710),
      reference("fa2", 8192, 2, 16.08, 16000, 1700),  // +0.5 %, 0
      reference("cudnn", 512, 1, 0.5, 500, 1500),     // no second pass: no drift entry
  };
  ResultRow other_run = reference("fa2", 512, 2, 2.0, 2000, 1700);
  other_run.host = "gpu-2";  // never paired with gpu-1's first pass
  rows.push_back(other_run);
  ResultRow other_seed = reference("fa2", 4096, 2, 9.0, 9000, 1700);
  other_seed.input_seed = 12;  // another sweep's inputs
  rows.push_back(other_seed);
  ResultRow faulted = reference("fa2", 8192, 3, 0, 0, 0);
  faulted.status = RowStatus::fault("x");
  rows.push_back(faulted);

  const std::vector<BaselineDrift> drifts = baseline_drift(pointers(rows));
  REQUIRE(drifts.size() == 1);
  const BaselineDrift& drift = drifts[0];
  CHECK(drift.baseline == Baseline::fa2);
  CHECK(drift.dtype == DType::FP16);
  CHECK(drift.run == "gpu-1, abc");
  REQUIRE(drift.points.size() == 3);
  CHECK(drift.points[0].first->problem.seq_len == 512);
  CHECK(drift.points[2].first->problem.seq_len == 8192);
  CHECK(drift.time_min == doctest::Approx(-0.005));
  CHECK(drift.time_max == doctest::Approx(0.010));
  CHECK(drift.time_median == doctest::Approx(0.005));
  REQUIRE(drift.cycles_min.has_value());
  CHECK(*drift.cycles_min == doctest::Approx(-0.0005));
  CHECK(*drift.cycles_max == doctest::Approx(0.001));
  CHECK(drift.clock_first_min == 1700);
  CHECK(drift.clock_first_max == 1720);
  CHECK(drift.clock_last_min == 1690);
  CHECK(drift.clock_last_max == 1730);
  CHECK(describe_drift(drift) ==
        "fa2 fp16: time -0.5 .. +1.0 % (median +0.5 %) over 3 N, cycles -0.05 .. +0.10 %, "
        "SM clock 1700-1720 -> 1690-1730 MHz");
}

TEST_CASE("rows without passes (older files) give no drift") {
  std::vector<ResultRow> rows = {reference("fa2", 512, 1, 1, 1, 1)};
  rows[0].reference_pass.reset();
  CHECK(baseline_drift(pointers(rows)).empty());
}

TEST_CASE("the causal passes of a shape pair with each other, not with the unmasked ones") {
  // One sweep with --causal 0,1: both workloads of N = 512 on the same inputs (seed).
  std::vector<ResultRow> rows = {
      reference("fa2", 512, 1, 1.000, 1000, 1700),
      reference("fa2", 512, 2, 1.010, 1010, 1700),  // +1.0 %
      reference("fa2", 512, 1, 0.600, 600, 1700),
      reference("fa2", 512, 2, 0.594, 594, 1700),  // -1.0 %
  };
  rows[2].problem.causal = rows[3].problem.causal = true;
  const std::vector<BaselineDrift> drifts = baseline_drift(pointers(rows));
  REQUIRE(drifts.size() == 1);
  REQUIRE(drifts[0].points.size() == 2);
  for (const BaselineDriftPoint& point : drifts[0].points)
    CHECK(point.first->problem.causal == point.last->problem.causal);
  CHECK(drifts[0].time_min == doctest::Approx(-0.01));
  CHECK(drifts[0].time_max == doctest::Approx(0.01));
}
