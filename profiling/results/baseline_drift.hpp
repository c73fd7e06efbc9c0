// How far the references moved while a sweep measured the kernels between them. A sweep measures
// each reference at a (dtype, N) before that shape's kernels (reference_pass 1) and again after
// them (pass 2); kernel rows are paired with pass 1. The change from pass 1 to pass 2 bounds how
// much the clock, temperature or power state drifted under those kernels' rows: a % FA2 smaller
// than the drift is not a result.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "profiling/results/results.hpp"

namespace flashscope {

struct BaselineDriftPoint {
  const ResultRow* first = nullptr;  // pass 1
  const ResultRow* last = nullptr;   // the highest pass measured at the same shape
  double time_change = 0;            // last median / first median - 1
  std::optional<double> cycles_change;
};

struct BaselineDrift {
  Baseline baseline = Baseline::fa2;
  DType dtype = DType::FP16;
  std::string run;                         // run_label() of the rows
  std::vector<BaselineDriftPoint> points;  // ascending N
  double time_min = 0, time_median = 0, time_max = 0;
  std::optional<double> cycles_min, cycles_max;  // over the points that have cycles in both
  int clock_first_min = 0, clock_first_max = 0;  // sm_clock_mhz of pass 1 / of the last pass
  int clock_last_min = 0, clock_last_max = 0;
};

// Pairs usable ("ok", not failed) reference rows of the same run, device, cache mode, reference,
// dtype, shape and input seed by pass; one entry per (run, reference, dtype) with at least one
// pair, ordered by run, reference, dtype.
std::vector<BaselineDrift> baseline_drift(const std::vector<const ResultRow*>& rows);

// "fa2 fp16: time -0.3 .. +1.2 % (median +0.4 %) over 6 N, cycles -0.05 .. +0.10 %, SM clock
// 1694-1739 -> 1702-1745 MHz"
std::string describe_drift(const BaselineDrift& drift);

}  // namespace flashscope
