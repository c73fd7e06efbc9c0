#include "profiling/sweep/sweep_parent.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <deque>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <system_error>
#include <tuple>

#include "kernels/common/cuda_check.hpp"
#include "profiling/cupti_metrics.hpp"
#include "profiling/device.hpp"
#include "profiling/results/baseline_drift.hpp"
#include "profiling/baselines/baseline_attention.hpp"
#include "profiling/sweep/sweep_worker.hpp"

extern char** environ;

namespace flashscope {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kWorkerRowFd = 3;  // the worker's end of the row pipe

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// A worker process with its two channels: rows come back on a pipe (its fd 3), commands go out on
// a socket (its stdin). A socket, because send(MSG_NOSIGNAL) to a worker that just died returns
// EPIPE instead of raising SIGPIPE in the parent.
class WorkerProcess {
 public:
  explicit WorkerProcess(const WorkerInvocation& invocation) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
    read_fd_ = fds[0];
    // Keep the write end away from fd 3: dup2 onto itself would not clear close-on-exec.
    const int write_fd = ::fcntl(fds[1], F_DUPFD_CLOEXEC, 10);
    ::close(fds[1]);
    if (write_fd < 0) {
      ::close(read_fd_);
      throw_errno("fcntl(F_DUPFD_CLOEXEC)");
    }
    int sockets[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
      ::close(read_fd_);
      ::close(write_fd);
      throw_errno("socketpair");
    }
    command_fd_ = sockets[0];

    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(invocation.executable.c_str()));
    for (const std::string& argument : invocation.arguments)
      argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, write_fd, kWorkerRowFd);
    posix_spawn_file_actions_adddup2(&actions, sockets[1], STDIN_FILENO);
    // Anything a library prints to stdout lands on stderr, never in the parent's CSV.
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
    // Its own process group: a Ctrl-C at the terminal reaches the parent only, which then stops
    // every worker itself and writes no fault row for the items they were measuring.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    const int status = ::posix_spawn(&pid_, invocation.executable.c_str(), &actions, &attributes,
                                     argv.data(), environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    ::close(write_fd);
    ::close(sockets[1]);
    if (status != 0) {
      ::close(read_fd_);
      ::close(command_fd_);
      errno = status;
      throw_errno("starting the sweep worker " + invocation.executable);
    }
  }
  ~WorkerProcess() {
    if (read_fd_ >= 0) ::close(read_fd_);
    close_commands();
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  int fd() const { return read_fd_; }
  // False when the worker is gone; its exit then tells what happened.
  bool send(const std::string& text) {
    if (command_fd_ < 0) return false;
    std::size_t sent = 0;
    while (sent < text.size()) {
      const ssize_t count =
          ::send(command_fd_, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
      if (count < 0 && errno == EINTR) continue;
      if (count <= 0) return false;
      sent += static_cast<std::size_t>(count);
    }
    return true;
  }
  // No more commands: the worker finishes what it was given and exits.
  void close_commands() {
    if (command_fd_ >= 0) ::close(command_fd_);
    command_fd_ = -1;
  }
  bool commands_closed() const { return command_fd_ < 0; }
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
  int command_fd_ = -1;
  bool reaped_ = false;
};

std::string format_fixed(double value, int digits) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(digits) << value;
  return text.str();
}

// Checks the counters once per device, in this process, so the warning about permissions is
// printed once and workers are not asked for metrics they cannot get. Unknown metric names are an
// error.
bool metrics_available(const SweepOptions& options, std::ostream& log) {
  activate_device(options.device);
  bool available = true;
  try {
    KernelProfiler probe(options.device, sweep_metric_names(options));
    log << "metrics on device " << options.device << ": " << probe.metrics().size() << " on "
        << probe.chip_name() << ", " << probe.passes() << " replay pass"
        << (probe.passes() == 1 ? "" : "es") << " per measurement, "
        << (probe.range_mode() == RangeMode::per_kernel ? "one range per kernel"
                                                        : "one range per launch")
        << "\n";
  } catch (const CountersNotPermitted&) {
    log << "warning: device " << options.device
        << ": timing continues without hardware metrics (their columns stay empty). "
        << counters_permission_hint() << "\n";
    available = false;
  } catch (const CuptiError& error) {
    log << "warning: device " << options.device
        << ": timing continues without hardware metrics: " << error.what() << "\n";
    available = false;
  }
  // Workers create their own contexts; this one would only hold device memory.
  cudaDeviceReset();
  return available;
}

// Reference medians are paired with kernel rows of the same device only: another GPU, even of the
// same model, runs at its own clock. And of the same workload: a causal kernel row is compared
// with the causal references alone.
using BaselineKey = std::tuple<int, Baseline, Problem>;

BaselineKey pairing_key(int device, Baseline baseline, const ResultRow& row) {
  return {device, baseline, row.problem};
}

std::string describe_row(const ResultRow& row) {
  if (!row.status.ok()) return row.status.text();
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
  text += ", " + std::string(verdict_name(row.verdict));
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

bool exited_with(int status, int code) {
  return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

class SweepParent {
 public:
  SweepParent(const SweepPlan& plan, const std::vector<SweepDevice>& devices,
              const WorkerStarter& start_worker, const SweepObserver& observer, std::ostream& log)
      : plan_(plan),
        start_worker_(start_worker),
        observer_(observer),
        log_(log),
        total_(plan.item_count()),
        several_(devices.size() > 1) {
    for (const SweepDevice& device : devices) {
      slots_.push_back(std::make_unique<Slot>());
      slots_.back()->device = device;
      slots_.back()->summary.device = device.description;
    }
    // The hand-out order: plan order on one device; biggest first on several (longest
    // processing time first), so no device is left with a long unit while the others idle.
    std::vector<std::size_t> order(plan.units.size());
    for (std::size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    if (several_)
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return plan.units[a].work_estimate() > plan.units[b].work_estimate();
      });
    for (const std::size_t unit : order)
      queue_.push_back({unit, 0});
  }

  SweepSummary run() {
    started_ = Clock::now();
    if (slots_.empty()) throw std::invalid_argument("a sweep needs at least one device");
    while (true) {
      if (observer_.stop_requested && observer_.stop_requested()) {
        stop_all();
        break;
      }
      hand_out();
      if (finished()) break;
      if (all_devices_failed()) {
        std::string message = "no device could start measuring:";
        for (const auto& slot : slots_)
          message += "\n  " + slot->summary.failure;
        throw std::runtime_error(message);
      }
      wait_for_workers();
    }
    summary_.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    for (const auto& slot : slots_)
      summary_.devices.push_back(slot->summary);
    summary_.drift = drift_lines();
    return summary_;
  }

 private:
  struct Assignment {
    std::size_t unit = 0;
    std::size_t next = 0;  // the item the device's worker measures now
  };

  struct Slot {
    SweepDevice device;
    DeviceSummary summary;
    std::unique_ptr<WorkerProcess> worker;
    std::unique_ptr<ResultsCsvParser> parser;
    std::size_t rows_from_worker = 0;   // rows the current worker process wrote
    std::size_t bytes_from_worker = 0;  // a worker that fails its setup writes not even a header
    std::optional<Assignment> assignment;
    bool sent = false;  // the current worker was sent the assignment
    Clock::time_point deadline;
    bool failed = false;
  };

  // One line per (reference, dtype) whose first and repeated passes were both measured.
  std::vector<std::string> drift_lines() const {
    std::vector<const ResultRow*> rows;
    for (const ResultRow& row : baseline_rows_)
      rows.push_back(&row);
    std::vector<std::string> lines;
    for (const BaselineDrift& drift : baseline_drift(rows))
      lines.push_back(describe_drift(drift));
    return lines;
  }

  std::string tag(const Slot& slot) const {
    return "GPU " + std::to_string(slot.device.description.index);
  }

  bool finished() const {
    if (!queue_.empty()) return false;
    for (const auto& slot : slots_)
      if (slot->assignment || slot->worker) return false;
    return true;
  }

  bool all_devices_failed() const {
    for (const auto& slot : slots_)
      if (!slot->failed) return false;
    return true;
  }

  // A worker times a unit's items together (interleaved rounds after every item's check) and
  // writes their rows at the end: it has --timeout per item still to come.
  void reset_deadline(Slot& slot) {
    std::size_t items_left = 1;
    if (slot.assignment)
      items_left = std::max<std::size_t>(
          1, plan_.units[slot.assignment->unit].items.size() - slot.assignment->next);
    slot.deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                           slot.device.options.timeout_s * static_cast<double>(items_left)));
  }

  // Gives every free device the next unit, starting its worker where it has none (or its last one
  // ended); closes the command channel of idle workers once nothing is left, so they exit.
  void hand_out() {
    for (const auto& owned : slots_) {
      Slot& slot = *owned;
      if (slot.failed) continue;
      if (!slot.assignment && !queue_.empty()) {
        slot.assignment = queue_.front();
        queue_.pop_front();
        slot.sent = false;
      }
      if (slot.assignment && !slot.sent) {
        if (slot.worker && slot.worker->commands_closed()) continue;  // let it exit first
        if (!slot.worker) start_worker(slot);
        send_assignment(slot);
      } else if (!slot.assignment && queue_.empty() && slot.worker &&
                 !slot.worker->commands_closed()) {
        slot.worker->close_commands();
      }
    }
  }

  void start_worker(Slot& slot) {
    slot.worker = std::make_unique<WorkerProcess>(start_worker_(slot.device, kWorkerRowFd));
    // The job first: the worker measures with these settings and this plan, as data (a worker
    // that died already fails the send; its end of the pipe then tells why).
    slot.worker->send(format_worker_job(slot.device.options, plan_));
    slot.parser = std::make_unique<ResultsCsvParser>("the sweep worker on " + tag(slot));
    slot.rows_from_worker = 0;
    slot.bytes_from_worker = 0;
    ++slot.summary.worker_starts;
  }

  void send_assignment(Slot& slot) {
    // A worker that died already fails this send; its end of the pipe then tells why.
    slot.worker->send(format_worker_command({slot.assignment->unit, slot.assignment->next}));
    slot.sent = true;
    reset_deadline(slot);
    announce();
  }

  // One poll over every worker's pipe, then reads, exits and timeouts.
  void wait_for_workers() {
    std::vector<pollfd> fds;
    std::vector<Slot*> polled;
    auto wait = std::chrono::milliseconds(200);
    const auto now = Clock::now();
    for (const auto& owned : slots_) {
      if (!owned->worker) continue;
      fds.push_back({owned->worker->fd(), POLLIN, 0});
      polled.push_back(owned.get());
      if (owned->assignment && owned->sent)
        wait = std::min(
            wait,
            std::max(std::chrono::milliseconds(0),
                     std::chrono::duration_cast<std::chrono::milliseconds>(owned->deadline - now)));
    }
    if (fds.empty()) return;  // every worker is to be (re)started by hand_out()
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
    if (ready < 0 && errno != EINTR) throw_errno("poll on the sweep workers' pipes");
    std::string buffer(1 << 16, '\0');
    for (std::size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      Slot& slot = *polled[i];
      const ssize_t count = ::read(slot.worker->fd(), buffer.data(), buffer.size());
      if (count < 0 && errno == EINTR) continue;
      if (count < 0) throw_errno("reading the pipe of the sweep worker on " + tag(slot));
      if (count == 0) {
        worker_ended(slot);
        continue;
      }
      slot.bytes_from_worker += static_cast<std::size_t>(count);
      for (ResultRow& row :
           slot.parser->feed(std::string_view(buffer.data(), static_cast<std::size_t>(count))))
        accept(slot, std::move(row));
    }
    for (const auto& owned : slots_) {
      Slot& slot = *owned;
      if (slot.worker && slot.assignment && slot.sent && Clock::now() >= slot.deadline) {
        slot.worker->kill();
        slot.worker->wait();
        slot.worker.reset();
        slot.sent = false;
        emit_fault(slot, "no result within " + format_fixed(slot.device.options.timeout_s, 0) +
                             " s; the worker was killed");
      }
    }
  }

  // The worker closed its pipe: it has exited or is about to.
  void worker_ended(Slot& slot) {
    if (slot.bytes_from_worker > 0)
      for (ResultRow& row : slot.parser->finish())
        accept(slot, std::move(row));
    const int status = slot.worker->wait();
    const std::size_t rows_written = slot.rows_from_worker;
    slot.worker.reset();
    const bool was_measuring = slot.assignment && slot.sent;
    slot.sent = false;  // a unit still assigned goes to a new worker
    if (!was_measuring) {
      if (!exited_with(status, kWorkerDone))
        log_ << "warning: the idle sweep worker on " << tag(slot)
             << " ended badly: " << describe_wait_status(status) << "\n";
      return;
    }
    if (exited_with(status, kWorkerSetupFailed) && rows_written == 0) {
      // The device cannot measure: its unit goes back to the others.
      slot.failed = true;
      slot.summary.failure = tag(slot) + " (" + slot.device.description.name +
                             "): its sweep worker could not start measuring (its message is above)";
      log_ << "error: " << slot.summary.failure;
      if (!all_devices_failed()) log_ << "; the other devices carry on";
      log_ << "\n";
      queue_.push_front(*slot.assignment);
      slot.assignment.reset();
      return;
    }
    // A worker that lost its CUDA context wrote that item's fault row itself before exiting.
    if (exited_with(status, kWorkerContextLost) && rows_written > 0) {
      log_ << "note: a new sweep worker on " << tag(slot) << " continues the plan\n";
      return;
    }
    emit_fault(slot, describe_wait_status(status) + " while measuring this item");
    if (slot.assignment)
      log_ << "note: a new sweep worker on " << tag(slot) << " continues the plan\n";
  }

  void accept(Slot& slot, ResultRow row) {
    ++slot.rows_from_worker;
    if (!slot.assignment)
      throw std::logic_error("the sweep worker on " + tag(slot) +
                             " wrote a row it was not asked for");
    const SweepUnit& unit = plan_.units[slot.assignment->unit];
    const MeasurementItem& item = unit.items[slot.assignment->next];
    if (row.subject != item.subject || row.problem != item.problem || row.config != item.config ||
        row.reference_pass.value_or(0) != item.reference_pass)
      throw std::logic_error("the sweep worker on " + tag(slot) + " measured " +
                             row.subject.text() + " " + config_text(row) + " " +
                             problem_label(row.problem) + " but the plan says " + item.label());
    reset_deadline(slot);
    finish_item(slot, std::move(row));
  }

  void emit_fault(Slot& slot, const std::string& reason) {
    const MeasurementItem& item = plan_.units[slot.assignment->unit].items[slot.assignment->next];
    ResultRow row = row_skeleton(item, slot.device.options, slot.device.description);
    row.status = RowStatus::fault(reason);
    finish_item(slot, std::move(row));
  }

  // Records the row of the slot's current item and moves the slot on.
  void finish_item(Slot& slot, ResultRow row) {
    const SweepUnit& unit = plan_.units[slot.assignment->unit];
    const MeasurementItem& item = unit.items[slot.assignment->next];
    const int device = slot.device.description.index;
    if (row.status.ok()) {
      if (item.is_baseline()) {
        // Kernel rows pair with the first pass on their own GPU, measured just before them;
        // later passes only show the drift.
        if (row.reference_pass.value_or(1) == 1)
          baselines_[pairing_key(device, *row.subject.which_baseline(), row)] = row;
        baseline_rows_.push_back(row);
      } else {
        const auto paired = [&](Baseline baseline) -> const ResultRow* {
          const auto found = baselines_.find(pairing_key(device, baseline, row));
          return found == baselines_.end() ? nullptr : &found->second;
        };
        const auto by_time = [&](const ResultRow* baseline) -> std::optional<double> {
          if (!baseline || !(row.median_ms > 0)) return std::nullopt;
          return baseline->median_ms / row.median_ms * 100.0;
        };
        // Cycles count the same work whatever the clock: the comparison a clock difference
        // between the two rows cannot move (docs/profiling.md, "Time and cycles").
        const auto by_cycles = [&](const ResultRow* baseline) -> std::optional<double> {
          if (!baseline || !baseline->cycles || !row.cycles || !(*row.cycles > 0))
            return std::nullopt;
          return *baseline->cycles / *row.cycles * 100.0;
        };
        const ResultRow* fa2 = paired(Baseline::fa2);
        const ResultRow* cudnn = paired(Baseline::cudnn);
        // The worker's per-round ratios (with their intervals) stand where it timed the
        // reference in the same rounds; a reference from elsewhere is paired by medians.
        if (!row.pct_fa2) row.pct_fa2 = by_time(fa2);
        row.pct_fa2_cycles = by_cycles(fa2);
        if (!row.pct_cudnn) row.pct_cudnn = by_time(cudnn);
        row.pct_cudnn_cycles = by_cycles(cudnn);
        if (fa2) row.fa2_entry_point = fa2->fa2_entry_point;
      }
    }
    ++completed_;
    ++slot.summary.rows;
    const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
    log_ << "[" << completed_ << "/" << total_ << ", " << format_fixed(elapsed, 0) << " s"
         << (several_ ? ", " + tag(slot) : "") << "] " << item.label() << ": " << describe_row(row)
         << (item.recorded ? "" : " (baseline for pct_*; another shard writes this row)") << "\n";
    log_.flush();
    if (item.recorded) {
      ++summary_.rows;
      if (row.status.is_fault()) ++summary_.faults;
      if (row.status.is_skipped()) ++summary_.skipped;
      if (row.verdict == Verdict::fail) ++summary_.failed_checks;
      if (observer_.on_row) observer_.on_row(row);
    } else {
      ++summary_.unrecorded_baselines;
    }
    if (++slot.assignment->next == unit.items.size()) {
      slot.assignment.reset();
      slot.sent = false;
      ++slot.summary.units;
    }
    announce();
  }

  void announce() {
    if (!observer_.on_progress) return;
    std::string current;
    for (const auto& slot : slots_) {
      if (!slot->assignment) continue;
      const MeasurementItem& item =
          plan_.units[slot->assignment->unit].items[slot->assignment->next];
      if (!current.empty()) current += "; ";
      current += several_ ? tag(*slot) + ": " + item.label() : item.label();
    }
    observer_.on_progress({completed_, total_, current});
  }

  void stop_all() {
    summary_.stopped = true;
    for (const auto& slot : slots_) {
      if (!slot->worker) continue;
      slot->worker->kill();
      slot->worker->wait();
      slot->worker.reset();
    }
  }

  const SweepPlan& plan_;
  const WorkerStarter& start_worker_;
  const SweepObserver& observer_;
  std::ostream& log_;
  std::size_t total_;
  bool several_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::deque<Assignment> queue_;
  std::size_t completed_ = 0;
  SweepSummary summary_;
  std::map<BaselineKey, ResultRow> baselines_;  // first-pass baseline rows, per GPU
  std::vector<ResultRow> baseline_rows_;        // every measured baseline row
  Clock::time_point started_;
};

std::string describe_device_line(const DeviceDescription& device) {
  std::ostringstream text;
  text << "device " << device.index << ": " << device.name << " (" << device.uuid << ", SM "
       << device.compute_capability / 10 << "." << device.compute_capability % 10 << ", "
       << device.sm_count << " SMs, L2 " << device.l2_bytes / (1024 * 1024) << " MiB)";
  return text.str();
}

}  // namespace

bool SweepSummary::device_failed() const {
  return std::any_of(devices.begin(), devices.end(),
                     [](const DeviceSummary& device) { return !device.failure.empty(); });
}

double SweepSummary::rows_per_second() const {
  return seconds > 0 ? static_cast<double>(rows) / seconds : 0.0;
}

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

SweepSummary run_sweep_on_devices(const SweepPlan& plan, const std::vector<SweepDevice>& devices,
                                  const WorkerStarter& start_worker, const SweepObserver& observer,
                                  std::ostream& log) {
  SweepParent parent(plan, devices, start_worker, observer, log);
  return parent.run();
}

SweepSummary run_sweep(const SweepOptions& options, const WorkerCommandLine& worker_command,
                       const SweepObserver& observer, std::ostream& log) {
  const SweepPlan plan = plan_sweep(options, built_kernels(), built_baselines());
  for (const std::string& name : options.baselines) {
    try {
      make_baseline(name);
    } catch (const BaselineUnavailable& error) {
      log << "note: " << error.what() << "\n";
    }
  }
  for (const std::string& note : plan.notes)
    if (!note.starts_with("reference '")) log << "note: " << note << "\n";

  // Throws NoCudaDevice without a GPU, std::invalid_argument for an index that does not exist.
  const std::vector<int> indices = resolve_sweep_devices(options, cuda_device_count());
  SweepOptions run_options = options;
  if (run_options.run_id.empty()) run_options.run_id = default_run_id();
  std::vector<SweepDevice> devices;
  for (const int index : indices) {
    SweepDevice device{describe_device(index), run_options};
    device.options.device = index;
    device.options.devices = DeviceSelection{};
    log << describe_device_line(device.description) << "\n";
    devices.push_back(std::move(device));
  }
  log << plan.item_count() << " measurements in " << plan.units.size()
      << " units (one per problem, its "
      << "kernels and references timed interleaved) over " << devices.size() << " device"
      << (devices.size() == 1 ? "" : "s") << ", one worker each; "
      << cache_mode_name(options.cache_mode) << " L2, "
      << measurement::interleaved_summary(options.interleaved) << "; input seed " << options.seed
      << "\n";
  log << "run: " << run_options.run_id << "\n";
  if (options.locked_sm_clock_mhz)
    log << "clocks: the caller says the SM clock is locked at " << *options.locked_sm_clock_mhz
        << " MHz (recorded per row; rows measured more than 3 % away are flagged)\n";

  for (SweepDevice& device : devices)
    if (device.options.collect_metrics && !metrics_available(device.options, log))
      device.options.collect_metrics = false;  // that device's metric columns stay empty
  const std::string executable = current_executable_path();
  const WorkerStarter start_worker = [&](const SweepDevice& device, int row_fd) {
    return WorkerInvocation{executable, worker_command(device.options, row_fd)};
  };
  const SweepSummary summary = run_sweep_on_devices(plan, devices, start_worker, observer, log);
  log << "sweep: " << summary.rows << " rows (" << summary.faults << " faults, " << summary.skipped
      << " skipped, " << summary.failed_checks << " failed their correctness check) in "
      << format_fixed(summary.seconds, 1) << " s, " << format_fixed(summary.rows_per_second(), 2)
      << " rows/s on " << devices.size() << " device" << (devices.size() == 1 ? "" : "s");
  if (summary.unrecorded_baselines > 0)
    log << "; " << summary.unrecorded_baselines << " baseline reference measurements not written";
  log << (summary.stopped ? "; stopped early" : "") << "\n";
  if (devices.size() > 1)
    for (const DeviceSummary& device : summary.devices)
      log << "  GPU " << device.device.index << " " << device.device.uuid << ": " << device.rows
          << " measurements, " << device.units << " units, " << device.worker_starts
          << " worker start" << (device.worker_starts == 1 ? "" : "s")
          << (device.failure.empty() ? "" : "; FAILED: " + device.failure) << "\n";
  if (!summary.drift.empty()) {
    log << "reference drift, repeated pass vs first pass at the same shape (kernel rows are "
           "paired with the first):\n";
    for (const std::string& line : summary.drift)
      log << "  " << line << "\n";
  }
  return summary;
}

}  // namespace flashscope
