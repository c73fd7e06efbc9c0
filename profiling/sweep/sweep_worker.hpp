// One sweep worker: a process on one GPU that measures the plan units its parent hands it, one row
// per item. The parent (sweep_parent.hpp) runs one worker per device; on the worker's stdin it
// first writes the job — the settings the worker measures with and the plan's units, as data —
// then "UNIT START" lines; the worker answers with CSV rows on a pipe. A kernel that corrupts the
// CUDA context costs only the worker, never the rows already written.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <stdexcept>

#include "profiling/device.hpp"
#include "profiling/results/results.hpp"
#include "profiling/sweep/sweep_plan.hpp"

namespace flashscope {

// Exit codes of a worker process (`explorer --csv --sweep-worker ...`).
enum WorkerExitCode : int {
  kWorkerDone = 0,             // its stdin closed after every unit it was given had its rows
  kWorkerUnexpectedError = 1,  // stopped without a row for the current item (message on stderr)
  kWorkerContextLost = 3,      // wrote a "fault: ..." row for a fault that broke the CUDA context
  kWorkerSetupFailed = 4,      // could not start measuring at all (message on stderr)
};

// Thrown after the row of a fault that left the CUDA context unusable; the process must end.
class CudaContextLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// This machine's name (gethostname), recorded in every row's host column; empty if unknown.
std::string host_name();

// The row fields every item's row starts with, filled from the item, the sweep's settings and the
// device measuring it (name, index, UUID).
ResultRow row_skeleton(const MeasurementItem& item, const SweepOptions& options,
                       const DeviceDescription& device);

// The job a worker receives before its first command: the options it measures with (only the
// fields a worker reads: device, seed, run id, locked clock, timing, metrics) and every unit of the
// plan. format_worker_job writes it as lines ending with "end"; parse_worker_job reads exactly
// that text back and throws std::invalid_argument naming the line that is not.
struct WorkerJob {
  SweepOptions options;
  std::vector<SweepUnit> units;
};
std::string format_worker_job(const SweepOptions& options, const SweepPlan& plan);
WorkerJob parse_worker_job(const std::vector<std::string>& lines);

// One "UNIT START" command of the parent: measure plan.units[unit].items[start...].
struct WorkerCommand {
  std::size_t unit = 0;
  std::size_t start = 0;
};
std::string format_worker_command(const WorkerCommand& command);  // "3 17\n"
// Throws std::invalid_argument for a line that is not two non-negative integers.
WorkerCommand parse_worker_command(const std::string& line);

// The worker process's whole life: reads its job from `command_fd`, sets up on the job's device,
// then for each command line read from `command_fd` measures that unit from that item, writing
// the rows as CSV to `row_fd`, until `command_fd` reaches its end. Returns a WorkerExitCode.
int run_sweep_worker(int row_fd, int command_fd);

// Test hooks (docs/profiling.md), unset in normal runs. FLASHSCOPE_TEST_FAULT=
// "<kind>:<step>:<seq_len>", kind one of illegal-address, abort, hang, makes the worker fault that
// way instead of measuring the matching kernel items; "setup:<device>" makes the worker of that
// device index fail before its first measurement. Used by the GPU tests of fault isolation.
void inject_test_fault_if_requested(const MeasurementItem& item, cudaStream_t stream);
void inject_test_setup_failure_if_requested(int device);

}  // namespace flashscope
