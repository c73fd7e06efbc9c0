// One sweep worker: measures the items of one plan unit in this process and emits one row per
// item. The parent (sweep_runner.hpp) runs each unit in its own worker process, so a kernel that
// corrupts the CUDA context costs only the worker, never the rows already written.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <stdexcept>

#include "profiling/results.hpp"
#include "profiling/sweep_plan.hpp"

namespace flashscope {

// Exit codes of a worker process (`explorer --csv --sweep-worker ...`).
enum WorkerExitCode : int {
  kWorkerDone = 0,             // every item of the unit from `start` on has a row
  kWorkerUnexpectedError = 1,  // stopped without a row for the current item (message on stderr)
  kWorkerContextLost = 3,      // wrote a "fault: ..." row for a fault that broke the CUDA context
  kWorkerSetupFailed = 4,      // could not start measuring at all (message on stderr)
};

// Thrown after the row of a fault that left the CUDA context unusable; the process must end.
class CudaContextLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using RowSink = std::function<void(const ResultRow&)>;

// This machine's name (gethostname), recorded in every row's host column; empty if unknown.
std::string host_name();

// The row fields every item's row starts with, filled from the item and the sweep's settings.
ResultRow row_skeleton(const MeasurementItem& item, const SweepOptions& options,
                       const std::string& device_name);

// Measures unit.items[start...] in order on options.device, one row per item to `sink`;
// warnings go to `log`. Throws CudaContextLost (after emitting the fault row) or, for failures
// before the first measurement, NoCudaDevice / CudaError.
void run_sweep_unit(const SweepOptions& options, const SweepUnit& unit, std::size_t start,
                    const RowSink& sink, std::ostream& log);

// The worker process's whole job: plans the sweep, runs unit `unit_index` from `start`, writes
// the rows as CSV to file descriptor `row_fd`. Returns a WorkerExitCode.
int run_sweep_worker(const SweepOptions& options, std::size_t unit_index, std::size_t start,
                     int row_fd);

// Test hook (docs/profiling.md): FLASHSCOPE_TEST_FAULT="<kind>:<step>:<seq_len>", kind one of
// illegal-address, abort, hang, makes the worker fault that way instead of measuring the matching
// kernel items. Used by the GPU test of fault isolation; unset in normal runs.
void inject_test_fault_if_requested(const MeasurementItem& item, cudaStream_t stream);

}  // namespace flashscope
