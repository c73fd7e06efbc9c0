// The headless sweep's parent process. It plans the sweep, checks each device and the metric names
// once, then starts one worker process per device (this executable again) and hands the plan's
// units, one (dtype, N) each, to whichever worker is free: one plan, one progress count, one
// stream of rows in the order they finish. It pairs each kernel row with the references measured
// before it on the same GPU (pct_* by time and by cycles) and reports how far the repeated
// references drifted. A worker that crashes, hits a sticky CUDA error or
// stops answering costs one item: the parent writes a "fault: ..." row for it and starts a new
// worker on that device at the next item. A device whose worker cannot start at all is reported
// and its unit goes back to the others (docs/profiling.md, "Fault isolation", "Several GPUs").
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "profiling/device.hpp"
#include "profiling/results/results.hpp"
#include "profiling/sweep/sweep_plan.hpp"

namespace flashscope {

struct SweepPosition {
  std::size_t completed = 0;  // measurements finished (rows written, and baselines)
  std::size_t total = 0;      // measurements in the plan
  std::string current;        // what each device is measuring, for a progress caption
};

struct SweepObserver {
  std::function<void(const ResultRow&)> on_row;           // every written row, as it arrives
  std::function<void(const SweepPosition&)> on_progress;  // when an item starts or ends
  std::function<bool()> stop_requested;                   // polled while waiting on workers
};

struct DeviceSummary {
  DeviceDescription device;
  std::size_t rows = 0;           // rows measured on it (written ones and baselines)
  std::size_t units = 0;          // units it finished
  std::size_t worker_starts = 0;  // 1 + one per fault that ended a worker
  std::string failure;            // why it stopped taking work; empty when it ran to the end
};

struct SweepSummary {
  std::vector<std::string> drift;  // per reference and dtype (baseline_drift.hpp), for the log
  std::size_t rows = 0;            // rows written
  std::size_t faults = 0;
  std::size_t skipped = 0;
  std::size_t failed_checks = 0;         // rows whose §1.4 verdict is fail
  std::size_t unrecorded_baselines = 0;  // baseline measurements another shard writes the row of
  bool stopped = false;                  // stop_requested ended the sweep early
  double seconds = 0;
  std::vector<DeviceSummary> devices;  // in the order of the sweep's devices
  bool device_failed() const;
  double rows_per_second() const;  // written rows / seconds
};

// The command line that starts a worker for `options` (options.device is the worker's device),
// writing CSV rows to file descriptor `row_fd` and reading its commands on stdin (argv[0]
// excluded). The CLI layer owns the option names; the options differ from the caller's only in the
// device and when counters turned out to be unavailable on it.
using WorkerCommandLine =
    std::function<std::vector<std::string>(const SweepOptions& options, int row_fd)>;

// Runs the sweep: `options.seed` must already be fixed (workers must agree on it). Progress and
// notes go to `log`. Throws NoCudaDevice, UnknownMetric, std::invalid_argument (nothing to
// measure, a device that does not exist) or std::runtime_error (no worker could start measuring).
SweepSummary run_sweep(const SweepOptions& options, const WorkerCommandLine& worker_command,
                       const SweepObserver& observer, std::ostream& log);

// What run_sweep does once the devices are known; it needs no GPU itself, so it is tested with
// stand-in workers.
struct SweepDevice {
  DeviceDescription description;
  SweepOptions options;  // the worker's: options.device == description.index
};
struct WorkerInvocation {
  std::string executable;
  std::vector<std::string> arguments;  // argv[1...]
};
using WorkerStarter = std::function<WorkerInvocation(const SweepDevice& device, int row_fd)>;

// Hands `plan`'s units to one worker per device until every item has a row. With one device the
// units go in plan order; with several, the biggest first (SweepUnit::work_estimate), so the last
// ones to finish are short. Throws std::runtime_error when no device's worker could start.
SweepSummary run_sweep_on_devices(const SweepPlan& plan, const std::vector<SweepDevice>& devices,
                                  const WorkerStarter& start_worker, const SweepObserver& observer,
                                  std::ostream& log);

// "<host> <UTC now>", e.g. "gpu-7 2026-11-21T06:45:03Z": a sweep's run_id unless given one.
std::string default_run_id();

// The executable to start workers from: /proc/self/exe.
std::string current_executable_path();

}  // namespace flashscope
