#include "profiling/sweep_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <system_error>
#include <tuple>

#include "kernels/common/cuda_check.hpp"
#include "profiling/cupti_metrics.hpp"
#include "profiling/device.hpp"
#include "profiling/reference_drift.hpp"
#include "profiling/references/reference_attention.hpp"
#include "profiling/sweep_worker.hpp"

extern char** environ;

namespace flashscope {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kWorkerRowFd = 3;  // the worker's end of the row pipe

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

class WorkerProcess {
 public:
  WorkerProcess(const std::string& executable, const std::vector<std::string>& arguments) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
    read_fd_ = fds[0];
    // Keep the write end away from fd 3: dup2 onto itself would not clear close-on-exec.
    const int write_fd = ::fcntl(fds[1], F_DUPFD_CLOEXEC, 10);
    ::close(fds[1]);
    if (write_fd < 0) throw_errno("fcntl(F_DUPFD_CLOEXEC)");

    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(executable.c_str()));
    for (const std::string& argument : arguments)
      argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, write_fd, kWorkerRowFd);
    // Anything a library prints to stdout lands on stderr, never in the parent's CSV.
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
    const int status =
        ::posix_spawn(&pid_, executable.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(write_fd);
    if (status != 0) {
      ::close(read_fd_);
      errno = status;
      throw_errno("starting the sweep worker " + executable);
    }
  }
  ~WorkerProcess() {
    if (read_fd_ >= 0) ::close(read_fd_);
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  int fd() const { return read_fd_; }
  void kill() { ::kill(pid_, SIGKILL); }
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int read_fd_ = -1;
  bool reaped_ = false;
};

std::string format_fixed(double value, int digits) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(digits) << value;
  return text.str();
}

// Checks the counters once, in this process, so the warning about permissions is printed once
// and workers are not asked for metrics they cannot get. Unknown metric names are an error.
bool metrics_available(const SweepOptions& options, std::ostream& log) {
  activate_device(options.device);
  bool available = true;
  try {
    KernelProfiler probe(options.device, sweep_metric_names(options));
    log << "metrics: " << probe.metrics().size() << " on " << probe.chip_name() << ", "
        << probe.passes() << " replay pass" << (probe.passes() == 1 ? "" : "es")
        << " per measurement, "
        << (probe.range_mode() == RangeMode::per_kernel ? "one range per kernel"
                                                        : "one range per launch")
        << "\n";
  } catch (const CountersNotPermitted&) {
    log << "warning: timing continues without hardware metrics (their columns stay empty). "
        << counters_permission_hint() << "\n";
    available = false;
  } catch (const CuptiError& error) {
    log << "warning: timing continues without hardware metrics: " << error.what() << "\n";
    available = false;
  }
  // Workers create their own contexts; this one would only hold device memory.
  cudaDeviceReset();
  return available;
}

using ReferenceKey = std::tuple<std::string, std::string, int, int, int, int>;

ReferenceKey reference_key(const std::string& name, const ResultRow& row) {
  return {name, row.dtype, row.d_head, row.batch, row.heads, row.seq_len};
}

std::string describe_row(const ResultRow& row) {
  if (row.status != "ok") return row.status;
  std::string text =
      format_fixed(row.median_ms, 3) + " ms, " + format_fixed(row.tflops, 1) + " TFLOP/s";
  const auto percent = [](const std::optional<double>& by_time,
                          const std::optional<double>& by_cycles, const char* name) {
    if (!by_time) return std::string();
    return ", " + format_fixed(*by_time, 1) + "% of " + name +
           (by_cycles ? " (" + format_fixed(*by_cycles, 1) + "% by cycles)" : "");
  };
  text += percent(row.pct_fa2, row.pct_fa2_cycles, "fa2");
  text += percent(row.pct_cudnn, row.pct_cudnn_cycles, "cudnn");
  if (row.sm_clock_mhz > 0) text += ", " + std::to_string(row.sm_clock_mhz) + " MHz";
  if (row.l2_hit_pct) text += ", L2 hit " + format_fixed(*row.l2_hit_pct, 1) + "%";
  text += ", " + row.verdict;
  return text;
}

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    const char* name = ::strsignal(signal);
    return "worker killed by signal " + std::to_string(signal) + " (" + (name ? name : "unknown") +
           ")";
  }
  if (WIFEXITED(status)) return "worker exited with code " + std::to_string(WEXITSTATUS(status));
  return "worker ended with wait status " + std::to_string(status);
}

class SweepParent {
 public:
  SweepParent(const SweepOptions& options, const SweepPlan& plan, const std::string& device_name,
              const WorkerCommandLine& worker_command, const SweepObserver& observer,
              std::ostream& log)
      : options_(options),
        plan_(plan),
        device_name_(device_name),
        worker_command_(worker_command),
        observer_(observer),
        log_(log),
        total_(plan.item_count()) {}

  SweepSummary run() {
    started_ = Clock::now();
    for (std::size_t unit = 0; unit < plan_.units.size() && !summary_.stopped; ++unit)
      run_unit(unit);
    summary_.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    return summary_;
  }

 private:
  void run_unit(std::size_t unit_index) {
    const SweepUnit& unit = plan_.units[unit_index];
    std::size_t next = 0;  // the item the current worker is measuring
    while (next < unit.items.size() && !summary_.stopped) {
      const std::size_t first = next;
      WorkerProcess worker(current_executable_path(),
                           worker_command_(options_, unit_index, first, kWorkerRowFd));
      ResultsCsvParser parser("the sweep worker of " + unit.name);
      announce(unit, next);
      const Outcome outcome = follow(worker, unit, parser, next);
      const int status = worker.wait();
      if (outcome == Outcome::stopped) {
        summary_.stopped = true;
        return;
      }
      if (outcome == Outcome::timed_out) {
        emit_fault(unit, next,
                   "no result within " + format_fixed(options_.timeout_s, 0) +
                       " s; the worker was killed");
        continue;
      }
      if (WIFEXITED(status) && WEXITSTATUS(status) == kWorkerContextLost && next > first)
        continue;  // the worker wrote the fault row itself
      if (WIFEXITED(status) && WEXITSTATUS(status) == kWorkerSetupFailed && next == first)
        throw std::runtime_error("the sweep worker of " + unit.name +
                                 " could not start measuring (its message is above)");
      if (WIFEXITED(status) && WEXITSTATUS(status) == kWorkerDone && next == unit.items.size())
        return;
      if (next < unit.items.size())
        emit_fault(unit, next, describe_wait_status(status) + " while measuring this item");
    }
  }

  enum class Outcome { finished, timed_out, stopped };

  // Streams the worker's rows until it closes the pipe, times out or the user stops the sweep.
  Outcome follow(WorkerProcess& worker, const SweepUnit& unit, ResultsCsvParser& parser,
                 std::size_t& next) {
    const auto timeout = std::chrono::duration<double>(options_.timeout_s);
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
    std::string buffer(1 << 16, '\0');
    while (true) {
      if (observer_.stop_requested && observer_.stop_requested()) {
        worker.kill();
        return Outcome::stopped;
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        worker.kill();
        return Outcome::timed_out;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      pollfd poll_fd{worker.fd(), POLLIN, 0};
      const int ready =
          ::poll(&poll_fd, 1, static_cast<int>(std::min<long long>(left.count(), 200)));
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) throw_errno("poll on the sweep worker's pipe");
      if (ready == 0) continue;
      const ssize_t count = ::read(worker.fd(), buffer.data(), buffer.size());
      if (count < 0 && errno == EINTR) continue;
      if (count < 0) throw_errno("reading the sweep worker's pipe");
      if (count == 0) {
        for (ResultRow& row : parser.finish())
          accept(unit, next, std::move(row));
        return Outcome::finished;
      }
      for (ResultRow& row :
           parser.feed(std::string_view(buffer.data(), static_cast<std::size_t>(count)))) {
        accept(unit, next, std::move(row));
        deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
      }
    }
  }

  void announce(const SweepUnit& unit, std::size_t item) {
    if (observer_.on_progress && item < unit.items.size())
      observer_.on_progress({summary_.rows, total_, unit.items[item].label()});
  }

  void accept(const SweepUnit& unit, std::size_t& next, ResultRow row) {
    if (next >= unit.items.size())
      throw std::logic_error("the sweep worker of " + unit.name + " wrote more rows than planned");
    const MeasurementItem& item = unit.items[next];
    if (row.step != item.step || row.seq_len != item.shape.seq_len ||
        row.config != (item.config ? to_short_form(*item.config) : "") ||
        row.reference_pass.value_or(0) != item.reference_pass)
      throw std::logic_error("the sweep worker of " + unit.name + " measured " + row.step + " " +
                             row.config + " N=" + std::to_string(row.seq_len) +
                             " but the plan says " + item.label());
    ++next;
    emit(std::move(row), item);
    announce(unit, next);
  }

  void emit_fault(const SweepUnit& unit, std::size_t& next, const std::string& reason) {
    const MeasurementItem& item = unit.items[next];
    ResultRow row = row_skeleton(item, options_, device_name_);
    row.status = "fault: " + reason;
    ++next;
    emit(std::move(row), item);
  }

  void emit(ResultRow row, const MeasurementItem& item) {
    if (row.status == "ok") {
      if (item.is_reference()) {
        // Kernel rows pair with the first pass, measured just before them; later passes only
        // show the drift.
        if (row.reference_pass.value_or(1) == 1) references_[reference_key(row.step, row)] = row;
        reference_rows_.push_back(row);
      } else {
        const auto paired = [&](const std::string& name) -> const ResultRow* {
          const auto found = references_.find(reference_key(name, row));
          return found == references_.end() ? nullptr : &found->second;
        };
        const auto by_time = [&](const ResultRow* reference) -> std::optional<double> {
          if (!reference || !(row.median_ms > 0)) return std::nullopt;
          return reference->median_ms / row.median_ms * 100.0;
        };
        // Cycles count the same work whatever the clock: the comparison a clock difference
        // between the two rows cannot move (docs/profiling.md, "Time and cycles").
        const auto by_cycles = [&](const ResultRow* reference) -> std::optional<double> {
          if (!reference || !reference->cycles || !row.cycles || !(*row.cycles > 0))
            return std::nullopt;
          return *reference->cycles / *row.cycles * 100.0;
        };
        const ResultRow* fa2 = paired("fa2");
        const ResultRow* cudnn = paired("cudnn");
        row.pct_fa2 = by_time(fa2);
        row.pct_fa2_cycles = by_cycles(fa2);
        row.pct_cudnn = by_time(cudnn);
        row.pct_cudnn_cycles = by_cycles(cudnn);
        if (fa2) row.fa2_entry_point = fa2->fa2_entry_point;
      }
    }
    ++summary_.rows;
    if (row.status.starts_with("fault")) ++summary_.faults;
    if (row.status.starts_with("skipped")) ++summary_.skipped;
    if (row.verdict == "fail") ++summary_.failed_checks;
    const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
    log_ << "[" << summary_.rows << "/" << total_ << ", " << format_fixed(elapsed, 0) << " s] "
         << item.label() << ": " << describe_row(row) << "\n";
    log_.flush();
    if (observer_.on_row) observer_.on_row(row);
  }

 public:
  // One line per (reference, dtype) whose first and repeated passes were both measured.
  std::vector<std::string> drift_lines() const {
    std::vector<const ResultRow*> rows;
    for (const ResultRow& row : reference_rows_)
      rows.push_back(&row);
    std::vector<std::string> lines;
    for (const ReferenceDrift& drift : reference_drift(rows))
      lines.push_back(describe_drift(drift));
    return lines;
  }

 private:
  const SweepOptions& options_;
  const SweepPlan& plan_;
  std::string device_name_;
  const WorkerCommandLine& worker_command_;
  const SweepObserver& observer_;
  std::ostream& log_;
  std::size_t total_;
  SweepSummary summary_;
  std::map<ReferenceKey, ResultRow> references_;  // first-pass reference rows
  std::vector<ResultRow> reference_rows_;         // every measured reference row

  Clock::time_point started_;
};

}  // namespace

std::string default_run_id() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  const std::string host = host_name();
  return (host.empty() ? std::string("unknown-host") : host) + " " + stamp;
}

std::string current_executable_path() {
  std::string path(4096, '\0');
  const ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (length <= 0) throw_errno("readlink(/proc/self/exe)");
  path.resize(static_cast<std::size_t>(length));
  return path;
}

SweepSummary run_sweep(const SweepOptions& options, const WorkerCommandLine& worker_command,
                       const SweepObserver& observer, std::ostream& log) {
  const SweepPlan plan = plan_sweep(options, built_kernels(), built_references());
  for (const std::string& name : options.references) {
    try {
      make_reference(name);
    } catch (const ReferenceUnavailable& error) {
      log << "note: " << error.what() << "\n";
    }
  }
  for (const std::string& note : plan.notes)
    if (!note.starts_with("reference '")) log << "note: " << note << "\n";

  const DeviceDescription device = describe_device(options.device);  // throws NoCudaDevice
  log << "device " << device.index << ": " << device.name << " (SM "
      << device.compute_capability / 10 << "." << device.compute_capability % 10 << ", "
      << device.sm_count << " SMs, L2 " << device.l2_bytes / (1024 * 1024) << " MiB); "
      << plan.item_count() << " measurements in " << plan.units.size() << " worker units; "
      << cache_mode_name(options.timing.cache_mode) << " L2, " << timing_summary(options.timing)
      << "; input seed " << options.seed << "\n";

  SweepOptions worker_options = options;
  if (worker_options.run_id.empty()) worker_options.run_id = default_run_id();
  log << "run: " << worker_options.run_id << "\n";
  if (options.collect_metrics && !metrics_available(options, log))
    worker_options.collect_metrics = false;  // the rows' metric columns stay empty
  if (options.locked_sm_clock_mhz)
    log << "clocks: the caller says the SM clock is locked at " << *options.locked_sm_clock_mhz
        << " MHz (recorded per row; rows measured more than 3 % away are flagged)\n";
  SweepParent parent(worker_options, plan, device.name, worker_command, observer, log);
  SweepSummary summary = parent.run();
  summary.drift = parent.drift_lines();
  log << "sweep: " << summary.rows << " rows (" << summary.faults << " faults, " << summary.skipped
      << " skipped, " << summary.failed_checks << " failed the §1.4 check) in "
      << format_fixed(summary.seconds, 1) << " s" << (summary.stopped ? "; stopped early" : "")
      << "\n";
  if (!summary.drift.empty()) {
    log << "reference drift, repeated pass vs first pass at the same shape (kernel rows are "
           "paired with the first):\n";
    for (const std::string& line : summary.drift)
      log << "  " << line << "\n";
  }
  return summary;
}

}  // namespace flashscope
