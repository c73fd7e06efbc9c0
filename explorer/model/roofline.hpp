// The roofline: every step and reference of a progression placed by arithmetic intensity
// (FLOP per DRAM byte: the two GEMMs' 4·B·H·N²·d over CUPTI's dram__bytes_read.sum +
// dram__bytes_write.sum of the profiled launch) and TFLOP/s, under the device's compute
// ceilings and its memory roof (the best `explorer peak` HBM bandwidth times the intensity).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "explorer/model/ceilings.hpp"
#include "explorer/model/progression.hpp"

namespace flashscope::explorer {

// The CUPTI metrics the roofline needs (explorer --csv --metrics ...).
inline constexpr const char* kDramReadMetric = "dram__bytes_read.sum";
inline constexpr const char* kDramWriteMetric = "dram__bytes_write.sum";

// FLOP per DRAM byte of a row; nullopt without both DRAM metrics (or with zero bytes).
std::optional<double> arithmetic_intensity(const ResultRow& row);

struct RooflinePoint {
  RowSubject subject;
  const ResultRow* row = nullptr;
  double intensity = 0;  // FLOP/byte
  double tflops = 0;
};

struct Roofline {
  std::vector<RooflinePoint> points;
  std::vector<const ComputeCeiling*> compute_roofs;  // of the query's dtype and the rows' device
  const MemoryCeiling* memory_roof = nullptr;
  std::string device;         // the device of the rows (the first one, when several)
  int rows_without_dram = 0;  // progression rows the plot cannot place
};

// The rows that carry both DRAM counters, and the ceiling rows. The roofline's progression is
// built over these: with several runs loaded, a step's fastest row may come from a run that did
// not collect the counters, and would hide the row of the run that did.
RowSet rows_with_dram(const RowSet& rows);

// The steps and references of `all` (the full progression) without a point in `placed` (the
// roofline of rows_with_dram): what the view reports as not placed.
std::vector<RowSubject> steps_not_placed(const Progression& all, const Roofline& placed);

// One point per row behind the progression's values (one per N for the harmonic mean). The
// roofline points into `ceilings` (and the progression's rows), which must outlive it; a
// temporary Ceilings is refused at compile time (the ASan build caught one in a test).
Roofline build_roofline(const Progression& progression, const Ceilings& ceilings,
                        const std::string& dtype);
Roofline build_roofline(const Progression& progression, const Ceilings&& ceilings,
                        const std::string& dtype) = delete;

// The attainable TFLOP/s at `intensity` under a compute roof and the memory roof:
// min(compute, GB/s · intensity / 1000).
double attainable_tflops(double compute_tflops, double gbytes_per_s, double intensity);

}  // namespace flashscope::explorer
