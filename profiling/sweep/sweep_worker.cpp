#include "profiling/sweep/sweep_worker.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <optional>
#include <sstream>
#include <iostream>
#include <map>
#include <memory>
#include <streambuf>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/launch_validation.hpp"
#include "profiling/cupti_metrics.hpp"
#include "profiling/device.hpp"
#include "profiling/kernel_attributes.hpp"
#include "profiling/baselines/baseline_attention.hpp"
#include "profiling/results/source_state.hpp"

namespace flashscope {

namespace {

// An ostream target that writes straight to a file descriptor (the parent's pipe), so a row is
// in the parent's hands once flush() returns.
class FdOutputBuffer : public std::streambuf {
 public:
  explicit FdOutputBuffer(int fd) : fd_(fd) {}

 protected:
  int_type overflow(int_type c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    const char byte = static_cast<char>(c);
    return write_all(&byte, 1) ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* data, std::streamsize count) override {
    return write_all(data, static_cast<std::size_t>(count)) ? count : 0;
  }

 private:
  bool write_all(const char* data, std::size_t count) {
    while (count > 0) {
      const ssize_t written = ::write(fd_, data, count);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) return false;
      data += written;
      count -= static_cast<std::size_t>(written);
    }
    return true;
  }
  int fd_;
};

class DeviceArray {
 public:
  explicit DeviceArray(std::size_t bytes) { FS_CUDA_CHECK(cudaMalloc(&data_, bytes)); }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

// Q, K, V drawn once per (dtype, shape), an output buffer, and the two §1.4 references.
class InputSet {
 public:
  InputSet(DType dtype, const AttentionShape& shape, std::uint64_t seed, cudaStream_t stream)
      : dtype_(dtype),
        shape_(shape),
        seed_(seed),
        q_(bytes(shape)),
        k_(bytes(shape)),
        v_(bytes(shape)),
        o_(bytes(shape)) {
    // The same derivation as `explorer check --seed`, so a row's input_seed reproduces its inputs.
    fill_random_normal(q_.get(), dtype, shape.elements(), seed * 3 + 0, 1.0f, stream);
    fill_random_normal(k_.get(), dtype, shape.elements(), seed * 3 + 1, 1.0f, stream);
    fill_random_normal(v_.get(), dtype, shape.elements(), seed * 3 + 2, 1.0f, stream);
    references_ =
        std::make_unique<ReferenceOutputs>(shape, dtype, q_.get(), k_.get(), v_.get(), stream);
  }

  bool matches(DType dtype, const AttentionShape& shape) const {
    return dtype == dtype_ && shape.batch == shape_.batch && shape.seq_len == shape_.seq_len &&
           shape.heads == shape_.heads && shape.d_head == shape_.d_head &&
           shape.causal == shape_.causal;  // the references differ with the mask
  }
  AttentionTensors tensors() const {
    const std::array<std::int64_t, 4> dims{shape_.batch, shape_.seq_len, shape_.heads,
                                           shape_.d_head};
    const auto view = [&](const void* data) {
      return TensorView{data, dtype_, MemoryLocation::device, dims, contiguous_strides(dims)};
    };
    return {view(q_.get()), view(k_.get()), view(v_.get()), view(o_.get()), shape_.causal};
  }
  const void* q() const { return q_.get(); }
  const void* k() const { return k_.get(); }
  const void* v() const { return v_.get(); }
  void* o() const { return o_.get(); }
  std::uint64_t seed() const { return seed_; }
  const ReferenceOutputs& references() const { return *references_; }

 private:
  static std::size_t bytes(const AttentionShape& shape) {
    return static_cast<std::size_t>(shape.elements()) * kElementBytes;
  }
  DType dtype_;
  AttentionShape shape_;
  std::uint64_t seed_;
  DeviceArray q_, k_, v_, o_;
  std::unique_ptr<ReferenceOutputs> references_;
};

int current_compute_capability(int device) {
  int major = 0, minor = 0;
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

// A sticky error (illegal address, trap, ...) makes every later call fail; an ordinary one does
// not survive the call that returned it.
bool cuda_context_broken() {
  return cudaDeviceSynchronize() != cudaSuccess;
}

double tflops_of(double flops, double ms) {
  return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0;
}

// Where a worker's wall time goes, printed when it ends: the sweep's time budget is mostly GPU
// time in `timing`, and anything else growing shows up here.
class PhaseClock {
 public:
  enum Phase { inputs, setup, check, timing, metrics, count };

  // Adds the time from construction to destruction to `phase`.
  class Scope {
   public:
    Scope(PhaseClock& clock, Phase phase)
        : clock_(clock), phase_(phase), start_(std::chrono::steady_clock::now()) {}
    ~Scope() {
      clock_.seconds_[phase_] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseClock& clock_;
    Phase phase_;
    std::chrono::steady_clock::time_point start_;
  };

  std::string summary(std::size_t measurements) const {
    static constexpr const char* kNames[count] = {"inputs and §1.4 references", "setup",
                                                  "§1.4 checks", "timing", "hardware metrics"};
    const double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    std::ostringstream text;
    text << std::fixed << std::setprecision(1) << measurements << " measurements in " << total
         << " s: ";
    double accounted = 0;
    for (int phase = 0; phase < count; ++phase) {
      text << kNames[phase] << " " << seconds_[phase] << " s, ";
      accounted += seconds_[phase];
    }
    text << "other " << std::max(0.0, total - accounted) << " s";
    return text.str();
  }

 private:
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  double seconds_[count] = {};
};

// Everything one worker keeps between items.
class UnitRunner {
 public:
  UnitRunner(const SweepOptions& options, std::ostream& log)
      : options_(options), log_(log), metric_names_(sweep_metric_names(options)) {
    device_ = describe_device(options.device);
    inject_test_setup_failure_if_requested(options.device);
    activate_device(options.device);
    compute_capability_ = current_compute_capability(options.device);
    FS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    if (options.timing.cache_mode == CacheMode::cold)
      flusher_ = std::make_unique<L2Flusher>(options.device);
    if (!metric_names_.empty()) {
      try {
        profiler_ = std::make_unique<KernelProfiler>(options.device, metric_names_);
      } catch (const CountersNotPermitted& error) {
        log_ << "warning: hardware metrics disabled, timing continues: " << error.what() << "\n";
      } catch (const CuptiError& error) {
        log_ << "warning: CUPTI cannot profile on this device, metric columns stay empty: "
             << error.what() << "\n";
      }
    }
  }
  ~UnitRunner() {
    inputs_.reset();
    if (stream_) cudaStreamDestroy(stream_);
  }

  ResultRow measure(const MeasurementItem& item) {
    ++measured_;
    ResultRow row = row_skeleton(item, options_, device_);
    try {
      measure_into(item, row);
      row.status = {};
    } catch (const LaunchValidationError& error) {
      row.status = RowStatus::skipped(error.what());
    } catch (const BaselineUnavailable& error) {
      row.status = RowStatus::skipped(error.what());
    } catch (const CudaError& error) {
      if (error.code() == cudaErrorMemoryAllocation && !cuda_context_broken())
        row.status = RowStatus::skipped(std::string("out of device memory: ") + error.what());
      else
        row.status = RowStatus::fault(error.what());
    } catch (const std::exception& error) {
      row.status = RowStatus::fault(error.what());
    }
    if (!row.status.ok()) {
      row.verdict = Verdict::unchecked;
      if (cuda_context_broken()) {
        row.status.reason += " (the CUDA context is lost; this worker ends here)";
        throw_after_.emplace(row.status.text());
      }
    }
    return row;
  }

  // Set by measure() when the row it returned reports a context-breaking fault.
  std::optional<std::string> throw_after_;

  // "worker: 70 measurements in 31.2 s: inputs ... (CUPTI session kept)"
  std::string time_summary() const {
    std::string text = "worker: " + phases_.summary(measured_);
    if (profiler_)
      text += profiler_->reuses_session()
                  ? " (one CUPTI session for all collections)"
                  : " (a CUPTI session per collection: this driver refused to reconfigure one)";
    return text;
  }

 private:
  void measure_into(const MeasurementItem& item, ResultRow& row) {
    const std::uint64_t seed = input_seed_for(options_.seed, item.dtype, item.shape);
    if (!inputs_ || !inputs_->matches(item.dtype, item.shape)) {
      const PhaseClock::Scope scope(phases_, PhaseClock::inputs);
      inputs_.reset();  // free the previous shape's buffers first
      inputs_ = std::make_unique<InputSet>(item.dtype, item.shape, seed, stream_);
    }
    InputSet& inputs = *inputs_;
    std::optional<PhaseClock::Scope> setup_scope(std::in_place, phases_, PhaseClock::setup);
    row.input_seed = inputs.seed();

    std::function<void(cudaStream_t)> launch;
    std::string range_name;
    if (item.is_baseline()) {
      const Baseline which = *item.subject.which_baseline();
      BaselineAttention& baseline = baseline_named(std::string(baseline_key(which)));
      baseline.prepare(item.shape, item.dtype);
      if (which == Baseline::fa2) row.fa2_entry_point = baseline.variant();
      launch = [&baseline, &inputs](cudaStream_t stream) {
        baseline.run(inputs.q(), inputs.k(), inputs.v(), inputs.o(), stream);
      };
      range_name = measurement_range_name(item.subject.text(), std::string(dtype_name(item.dtype)),
                                          item.shape.seq_len);
    } else {
      const KernelEntry& entry = built_kernels().find(*item.subject.step(), *item.config);
      const AttentionTensors tensors = inputs.tensors();
      validate_launch(entry, tensors, compute_capability_);
      const ForwardArgs args = make_forward_args(entry, tensors);
      launch = [&entry, args](cudaStream_t stream) { FS_CUDA_CHECK(entry.launch(args, stream)); };
      const KernelResources resources = kernel_resources(entry);
      row.registers = resources.registers_per_thread;
      row.smem_bytes = resources.shared_bytes_per_cta;
      row.local_bytes = resources.local_bytes_per_thread;
      range_name = measurement_range_name(item.subject.text(), to_short_form(*item.config),
                                          item.shape.seq_len);
      inject_test_fault_if_requested(item, stream_);
    }

    setup_scope.reset();
    // §1.4 before timing: a poisoned output, one launch, both references.
    std::optional<PhaseClock::Scope> check_scope(std::in_place, phases_, PhaseClock::check);
    poison_output(inputs.o(), item.dtype, item.shape.elements(), stream_);
    launch(stream_);
    FS_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const CorrectnessVerdict verdict = inputs.references().check(inputs.o(), stream_);
    row.verdict = verdict.passed ? Verdict::pass : Verdict::fail;
    row.max_error = verdict.vs_fp32.max_abs;
    if (!verdict.passed)
      log_ << "warning: " << item.label() << " fails the §1.4 check: " << verdict.summary() << "\n";

    check_scope.reset();
    std::optional<PhaseClock::Scope> timing_scope(std::in_place, phases_, PhaseClock::timing);
    const TimingStats timing = time_launches(launch, options_.timing, stream_, flusher_.get(),
                                             MeasurementRangeName{range_name});
    timing_scope.reset();
    row.runs = static_cast<int>(timing.samples_ms.size());
    row.median_ms = timing.median_ms;
    row.min_ms = timing.min_ms;
    row.max_ms = timing.max_ms;
    // A causal row counts half the FLOP (docs/spec/kernel-progression.md §1.3).
    row.tflops = tflops_of(matmul_flops(item.shape), timing.median_ms);
    row.seed_attn_tflops = tflops_of(seed_attention_flops(item.shape), timing.median_ms);
    row.sm_clock_mhz = timing.sm_clock_mhz;

    if (profiler_) {
      const PhaseClock::Scope scope(phases_, PhaseClock::metrics);
      collect_metrics(item, launch, row);
    }
    row.warnings = join_warnings(sanity_warnings(row));
    if (!row.warnings.empty()) log_ << "warning: " << item.label() << ": " << row.warnings << "\n";
  }

  void collect_metrics(const MeasurementItem& item, const std::function<void(cudaStream_t)>& launch,
                       ResultRow& row) {
    try {
      const auto before_pass = [this] {
        if (flusher_) flusher_->flush(stream_);
      };
      std::map<std::string, std::vector<double>> samples;
      // Warm: the profiled launches run back to back in one collection, as the timed ones do.
      // Cold: each needs its own flush, so each gets its own collection.
      const int per_collection =
          flusher_ ? 1 : std::min(options_.metric_runs, KernelProfiler::kMaxLaunchesPerCollection);
      for (int done = 0; done < options_.metric_runs; done += per_collection) {
        const int launches = std::min(per_collection, options_.metric_runs - done);
        for (const KernelMetrics& metrics : profiler_->collect(
                 before_pass, [&] { launch(stream_); }, stream_, launches))
          for (const auto& [name, value] : metrics.values)
            samples[name].push_back(value);
      }
      const auto value = [&samples](const std::string& name) -> std::optional<double> {
        const auto found = samples.find(name);
        if (found == samples.end()) return std::nullopt;
        return summarize_samples(found->second).median_ms;  // the median, whatever the unit
      };
      row.cycles = value("sm__cycles_elapsed.max");
      row.l2_hit_pct = value("lts__t_sector_hit_rate.pct");
      if (const auto ns = value("gpu__time_duration.sum")) row.cupti_duration_ms = *ns / 1e6;
      for (const std::string& extra : extra_metric_columns(options_))
        if (const auto v = value(extra)) row.extra_metrics[extra] = *v;
    } catch (const CountersNotPermitted& error) {
      log_ << "warning: hardware metrics disabled, timing continues: " << error.what() << "\n";
      profiler_.reset();
    } catch (const CuptiError& error) {
      // The timing stands; only this row's metric columns stay empty.
      if (cuda_context_broken()) throw;
      log_ << "warning: " << item.label() << ": no hardware metrics: " << error.what() << "\n";
    }
  }

  BaselineAttention& baseline_named(const std::string& name) {
    auto found = baselines_.find(name);
    if (found == baselines_.end()) found = baselines_.emplace(name, make_baseline(name)).first;
    return *found->second;
  }

  const SweepOptions& options_;
  std::ostream& log_;
  std::vector<std::string> metric_names_;
  DeviceDescription device_;
  int compute_capability_ = 0;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<L2Flusher> flusher_;
  std::unique_ptr<KernelProfiler> profiler_;
  std::unique_ptr<InputSet> inputs_;
  std::map<std::string, std::unique_ptr<BaselineAttention>> baselines_;
  PhaseClock phases_;
  std::size_t measured_ = 0;
};

}  // namespace

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

ResultRow row_skeleton(const MeasurementItem& item, const SweepOptions& options,
                       const DeviceDescription& device) {
  ResultRow row;
  row.subject = item.subject;
  row.config = item.config;
  row.dtype = item.dtype;
  row.d_head = item.shape.d_head;
  row.batch = item.shape.batch;
  row.heads = item.shape.heads;
  row.seq_len = item.shape.seq_len;
  row.causal = item.shape.causal;
  row.verdict = Verdict::unchecked;
  row.device = device.name;
  row.device_index = device.index;
  row.device_uuid = device.uuid;
  row.cache_mode = std::string(cache_mode_name(options.timing.cache_mode));
  row.git_commit = std::string(source_state().commit);
  row.git_dirty = source_state().dirty;
  row.host = host_name();
  row.run_id = options.run_id;
  row.locked_sm_clock_mhz = options.locked_sm_clock_mhz;
  if (item.is_baseline()) row.reference_pass = item.reference_pass;
  row.input_seed = input_seed_for(options.seed, item.dtype, item.shape);
  return row;
}

std::string format_worker_command(const WorkerCommand& command) {
  return std::to_string(command.unit) + " " + std::to_string(command.start) + "\n";
}

WorkerCommand parse_worker_command(const std::string& line) {
  WorkerCommand command;
  const char* begin = line.data();
  const char* end = line.data() + line.size();
  const auto [after_unit, unit_error] = std::from_chars(begin, end, command.unit);
  const bool separated = unit_error == std::errc() && after_unit < end && *after_unit == ' ';
  const auto [after_start, start_error] =
      separated ? std::from_chars(after_unit + 1, end, command.start)
                : std::from_chars_result{end, std::errc::invalid_argument};
  if (!separated || start_error != std::errc() || after_start != end)
    throw std::invalid_argument("sweep worker: command '" + line +
                                "' is not 'UNIT START' (two non-negative integers)");
  return command;
}

namespace {

// Reads '\n'-terminated lines from a file descriptor (the parent's command socket).
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}

  // False at the end of the input; a last line without '\n' is returned first.
  bool next(std::string& line) {
    while (true) {
      const std::size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return true;
      }
      char chunk[256];
      const ssize_t count = ::read(fd_, chunk, sizeof chunk);
      if (count < 0 && errno == EINTR) continue;
      if (count <= 0) {
        if (buffer_.empty()) return false;
        line = std::move(buffer_);
        buffer_.clear();
        return true;
      }
      buffer_.append(chunk, static_cast<std::size_t>(count));
    }
  }

 private:
  int fd_;
  std::string buffer_;
};

}  // namespace

int run_sweep_worker(const SweepOptions& options, int row_fd, int command_fd) {
  // If the sweep is killed (a timeout, a signal to its process alone), its worker goes too instead
  // of measuring on; should the parent die before this line, the closed pipe stops the worker.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  FdOutputBuffer buffer(row_fd);
  std::ostream rows(&buffer);
  std::size_t written = 0;
  std::unique_ptr<UnitRunner> runner;
  try {
    const SweepPlan plan = plan_sweep(options, built_kernels(), built_baselines());
    runner = std::make_unique<UnitRunner>(options, std::cerr);
    ResultsCsvWriter writer(rows, extra_metric_columns(options));
    LineReader commands(command_fd);
    std::string line;
    while (commands.next(line)) {
      const WorkerCommand command = parse_worker_command(line);
      if (command.unit >= plan.units.size())
        throw std::invalid_argument("sweep worker: unit " + std::to_string(command.unit) +
                                    " does not exist (the plan has " +
                                    std::to_string(plan.units.size()) + ")");
      const SweepUnit& unit = plan.units[command.unit];
      for (std::size_t i = command.start; i < unit.items.size(); ++i) {
        const ResultRow row = runner->measure(unit.items[i]);
        writer.write(row);
        ++written;
        if (runner->throw_after_) throw CudaContextLost(*runner->throw_after_);
      }
    }
  } catch (const CudaContextLost&) {
    std::cerr << runner->time_summary() << "\n";
    return kWorkerContextLost;
  } catch (const std::exception& error) {
    std::cerr << "explorer sweep worker: " << error.what() << "\n";
    // Before the first row nothing was measured: the setup itself failed. Later failures (the
    // pipe, the writer) cost only the item being measured, like a crash.
    return written == 0 ? kWorkerSetupFailed : kWorkerUnexpectedError;
  }
  std::cerr << runner->time_summary() << "\n";
  return kWorkerDone;
}

}  // namespace flashscope
