// The headless sweep's parent process. It plans the sweep, checks the device and the metric names
// once, then runs the plan's unit (per dtype and N: the references, every step's configs, the
// references again) in a worker process started from this executable, streaming the worker's
// rows out as they arrive. It pairs each kernel row with the references measured before it
// (pct_* by time and by cycles) and reports how far the repeated references drifted. A worker that
// crashes, hits a sticky CUDA error or stops answering costs one item: the parent writes a
// "fault: ..." row for it and starts a new worker at the next item (docs/profiling.md).
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "profiling/results.hpp"
#include "profiling/sweep_plan.hpp"

namespace flashscope {

struct SweepPosition {
  std::size_t completed = 0;
  std::size_t total = 0;
  std::string current;  // the item being measured, for a progress caption
};

struct SweepObserver {
  std::function<void(const ResultRow&)> on_row;           // every row, in plan order
  std::function<void(const SweepPosition&)> on_progress;  // before each item
  std::function<bool()> stop_requested;                   // polled while waiting on a worker
};

struct SweepSummary {
  std::vector<std::string> drift;  // per reference and dtype (reference_drift.hpp), for the log
  std::size_t rows = 0;
  std::size_t faults = 0;
  std::size_t skipped = 0;
  std::size_t failed_checks = 0;  // rows whose §1.4 verdict is fail
  bool stopped = false;           // stop_requested ended the sweep early
  double seconds = 0;
};

// The command line that runs unit `unit` from item `start` of a sweep with `options` in a worker,
// writing CSV rows to file descriptor `row_fd` (argv[0] excluded). The CLI layer owns the option
// names; the options differ from the caller's only when counters turned out to be unavailable.
using WorkerCommandLine = std::function<std::vector<std::string>(
    const SweepOptions& options, std::size_t unit, std::size_t start, int row_fd)>;

// Runs the sweep: `options.seed` must already be fixed (workers must agree on it). Progress and
// notes go to `log`. Throws NoCudaDevice, UnknownMetric, std::invalid_argument (nothing to
// measure) or std::runtime_error (a worker could not start measuring at all).
SweepSummary run_sweep(const SweepOptions& options, const WorkerCommandLine& worker_command,
                       const SweepObserver& observer, std::ostream& log);

// "<host> <UTC now>", e.g. "gpu-7 2026-11-21T06:45:03Z": a sweep's run_id unless given one.
std::string default_run_id();

// The executable to start workers from: /proc/self/exe.
std::string current_executable_path();

}  // namespace flashscope
