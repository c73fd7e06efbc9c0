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
#include <set>
#include <utility>
#include <streambuf>
#include <vector>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/device_buffer.hpp"
#include "kernels/common/problem_axes.hpp"
#include "kernels/common/reference.hpp"
#include "kernels/common/reference_backward.hpp"
#include "kernels/common/text.hpp"
#include "configs/config_sets.hpp"
#include "configs/launch_validation.hpp"
#include "profiling/cupti_metrics.hpp"
#include "profiling/device.hpp"
#include "profiling/kernel_attributes.hpp"
#include "profiling/baselines/baseline_attention.hpp"
#include "profiling/check.hpp"
#include "profiling/measurement/interleaved.hpp"
#include "profiling/measurement/nvml_sampler.hpp"
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

// The correctness of one checked launch, whichever pass: passed, the error reported in the row
// (a backward's largest over dQ, dK and dV) and the verdict's text for the log.
struct CheckOutcome {
  bool passed = false;
  double max_error = 0;
  std::string summary;
  // e4m3 rows (fp8-track.md §2): max and RMS of |O - R_ref| over the sampled rows.
  std::optional<double> max_error_fp64, rms_error_fp64;
};

// Q, K, V drawn once per problem, an output buffer, and the two §1.4 references. A backward
// problem (backward-track.md §2) adds dO, the references' forward O and log-sum-exp as the
// backward's inputs, the three gradients' buffers and their two references.
class InputSet {
 public:
  InputSet(const Problem& problem, std::uint64_t seed, cudaStream_t stream)
      : problem_(problem),
        seed_(seed),
        q_(bytes(problem.query_elements())),
        k_(bytes(problem.key_value_elements())),
        v_(bytes(problem.key_value_elements())),
        o_(static_cast<std::size_t>(problem.query_elements()) *
           element_bytes(output_dtype(problem.dtype))) {
    // The same derivation as `explorer check --seed`, so a row's input_seed reproduces its inputs
    // (e4m3: their values; check quantizes them per (sample, head), the sweep per tensor).
    const DType dtype = problem.dtype;
    if (needs_descales(dtype)) {
      // e4m3 (fp8-track.md §1): quantized on the device with their descales, [batch, heads]
      // arrays as the steps take them, all holding the tensor's one descale (amax over the
      // whole tensor): cuDNN's FP8 attention takes one descale per tensor (fp8-track.md §3), and
      // with these it runs the very problem the steps run. e4m3 is a floating-point format: a
      // coarser scale moves values, not their relative rounding, except for the few that it
      // pushes into the subnormals. Its references are fp8_reference.hpp's CPU ones, far too
      // slow for a whole sweep-sized problem, so check() judges a sample of rows
      // (check_e4m3_sample).
      const auto descales = [&](int heads) {
        return DeviceBuffer(sizeof(float) * static_cast<std::size_t>(problem.batch) * heads);
      };
      q_descale_ = descales(problem.heads);
      k_descale_ = descales(problem.heads_kv);
      v_descale_ = descales(problem.heads_kv);
      const auto fill = [&](void* codes, const DeviceBuffer& descale, int heads,
                            std::uint64_t tensor_seed) {
        fill_random_e4m3(codes, static_cast<float*>(descale.get()), problem.batch, problem.seq_len,
                         heads, problem.d_head, tensor_seed, 1.0f, stream, E4m3Scaling::per_tensor);
      };
      fill(q_.get(), q_descale_, problem.heads, seed * 3 + 0);
      fill(k_.get(), k_descale_, problem.heads_kv, seed * 3 + 1);
      fill(v_.get(), v_descale_, problem.heads_kv, seed * 3 + 2);
      return;
    }
    fill_random_normal(q_.get(), dtype, problem.query_elements(), seed * 3 + 0, 1.0f, stream);
    fill_random_normal(k_.get(), dtype, problem.key_value_elements(), seed * 3 + 1, 1.0f, stream);
    fill_random_normal(v_.get(), dtype, problem.key_value_elements(), seed * 3 + 2, 1.0f, stream);
    if (problem.pass == Pass::forward) {
      references_ =
          std::make_unique<ReferenceOutputs>(problem, q_.get(), k_.get(), v_.get(), stream);
      return;
    }
    d_o_ = DeviceBuffer(bytes(problem.query_elements()));
    dq_ = DeviceBuffer(bytes(problem.query_elements()));
    dk_ = DeviceBuffer(bytes(problem.key_value_elements()));
    dv_ = DeviceBuffer(bytes(problem.key_value_elements()));
    lse_ = DeviceBuffer(sizeof(float) * static_cast<std::size_t>(problem.batch) * problem.heads *
                        static_cast<std::size_t>(problem.seq_len));
    fill_random_normal(d_o_.get(), dtype, problem.query_elements(), check_d_o_seed(seed), 1.0f,
                       stream);
    // Every backward of the cell (steps and baselines) differentiates this forward.
    gpu_reference_forward_with_lse(problem, dtype, q_.get(), k_.get(), v_.get(), o_.get(), lse(),
                                   stream);
    backward_references_ = std::make_unique<BackwardReferenceOutputs>(
        problem, dtype, q_.get(), k_.get(), v_.get(), o_.get(), d_o_.get(), lse(), stream);
  }

  // The references differ with every axis of the problem (the mask and the pass included).
  bool matches(const Problem& problem) const { return problem == problem_; }
  AttentionTensors tensors() const {
    AttentionTensors out{view(q_.get(), problem_.heads), view(k_.get(), problem_.heads_kv),
                         view(v_.get(), problem_.heads_kv), view(o_.get(), problem_.heads),
                         problem_.causal};
    out.o.dtype = output_dtype(problem_.dtype);
    if (needs_descales(problem_.dtype)) {
      const auto descale = [&](const DeviceBuffer& buffer, int heads) {
        return DescaleView{static_cast<const float*>(buffer.get()),
                           MemoryLocation::device,
                           {problem_.batch, heads},
                           {heads, 1}};
      };
      out.q_descale = descale(q_descale_, problem_.heads);
      out.k_descale = descale(k_descale_, problem_.heads_kv);
      out.v_descale = descale(v_descale_, problem_.heads_kv);
    }
    return out;
  }
  // The tensors as `entry`'s kernel reads them. A step with block descales (`.block_descales`,
  // step 31) gets the tensor's one descale written into [batch, heads, blocks] arrays of its own
  // blocks (B_r / group query positions, B_c keys): it then runs the per-tile layout (a load per
  // KV tile, the largest V descale over the head's blocks) on exactly the values every other step
  // and cuDNN run, so its row times block quantization's work on the sweep's shared inputs.
  AttentionTensors tensors(const KernelEntry& entry) {
    AttentionTensors out = tensors();
    if (!needs_descales(problem_.dtype) || !configs::step_descriptor(entry.step).block_descales)
      return out;
    const int q_rows = std::min(problem_.seq_len, entry.config.B_r / problem_.group_size());
    const int kv_rows = std::min(problem_.seq_len, entry.config.B_c);
    const auto blocks = [&](int rows) { return (problem_.seq_len + rows - 1) / rows; };
    if (block_rows_ != std::pair{q_rows, kv_rows}) {
      const auto expand = [&](const DeviceBuffer& per_head, int heads, int rows) {
        float descale = 0;  // every (sample, head) holds the tensor's one descale
        FS_CUDA_CHECK(cudaMemcpy(&descale, per_head.get(), sizeof(float), cudaMemcpyDeviceToHost));
        const std::vector<float> values(
            static_cast<std::size_t>(problem_.batch) * heads * blocks(rows), descale);
        DeviceBuffer buffer(values.size() * sizeof(float));
        FS_CUDA_CHECK(cudaMemcpy(buffer.get(), values.data(), values.size() * sizeof(float),
                                 cudaMemcpyHostToDevice));
        return buffer;
      };
      q_block_descale_ = expand(q_descale_, problem_.heads, q_rows);
      k_block_descale_ = expand(k_descale_, problem_.heads_kv, kv_rows);
      v_block_descale_ = expand(v_descale_, problem_.heads_kv, kv_rows);
      block_rows_ = {q_rows, kv_rows};
    }
    const auto view = [&](const DeviceBuffer& buffer, int heads, int rows) {
      const std::int64_t per_head = blocks(rows);
      return DescaleView{static_cast<const float*>(buffer.get()),
                         MemoryLocation::device,
                         {problem_.batch, heads},
                         {heads * per_head, per_head},
                         rows == problem_.seq_len ? 0 : rows};
    };
    out.q_descale = view(q_block_descale_, problem_.heads, q_rows);
    out.k_descale = view(k_block_descale_, problem_.heads_kv, kv_rows);
    out.v_descale = view(v_block_descale_, problem_.heads_kv, kv_rows);
    return out;
  }
  BackwardTensors backward_tensors() const {
    BackwardTensors out{view(q_.get(), problem_.heads),     view(k_.get(), problem_.heads_kv),
                        view(v_.get(), problem_.heads_kv),  view(o_.get(), problem_.heads),
                        view(d_o_.get(), problem_.heads),   view(dq_.get(), problem_.heads),
                        view(dk_.get(), problem_.heads_kv), view(dv_.get(), problem_.heads_kv)};
    out.softmax_lse = lse();
    out.causal = problem_.causal;
    return out;
  }
  BaselineBackwardBuffers backward_buffers() const {
    return {q_.get(), k_.get(),  v_.get(),  o_.get(), d_o_.get(),
            lse(),    dq_.get(), dk_.get(), dv_.get()};
  }
  BaselineDescales descales() const {
    return {static_cast<const float*>(q_descale_.get()),
            static_cast<const float*>(k_descale_.get()),
            static_cast<const float*>(v_descale_.get())};
  }
  const void* q() const { return q_.get(); }
  const void* k() const { return k_.get(); }
  const void* v() const { return v_.get(); }
  void* o() const { return o_.get(); }
  std::uint64_t seed() const { return seed_; }

  // NaN into what the launch must write: O, or dQ, dK and dV.
  void poison_outputs(cudaStream_t stream) const {
    if (problem_.pass == Pass::forward) {
      poison_output(o_.get(), output_dtype(problem_.dtype), problem_.query_elements(), stream);
      return;
    }
    poison_output(dq_.get(), problem_.dtype, problem_.query_elements(), stream);
    poison_output(dk_.get(), problem_.dtype, problem_.key_value_elements(), stream);
    poison_output(dv_.get(), problem_.dtype, problem_.key_value_elements(), stream);
  }

  // §1.4 on O, or backward-track.md §2 on each gradient.
  CheckOutcome check(cudaStream_t stream) const {
    if (problem_.pass == Pass::forward) {
      if (needs_descales(problem_.dtype)) return check_e4m3_sample(stream);
      const CorrectnessVerdict verdict = references_->check(o_.get(), stream);
      return {verdict.passed, verdict.vs_fp32.max_abs, verdict.summary()};
    }
    const BackwardCorrectnessVerdict verdict =
        backward_references_->check(dq_.get(), dk_.get(), dv_.get(), stream);
    return {verdict.passed,
            std::max({verdict.dq.vs_fp32.max_abs, verdict.dk.vs_fp32.max_abs,
                      verdict.dv.vs_fp32.max_abs}),
            verdict.summary()};
  }

 private:
  std::size_t bytes(std::int64_t elements) const {
    return static_cast<std::size_t>(elements) * element_bytes(problem_.dtype);
  }
  float* lse() const { return static_cast<float*>(lse_.get()); }
  TensorView view(const void* data, int heads) const {
    const std::array<std::int64_t, 4> dims{problem_.batch, problem_.seq_len, heads,
                                           problem_.d_head};
    return TensorView{data, problem_.dtype, MemoryLocation::device, dims, contiguous_strides(dims)};
  }
  // Query rows per (sample, head) pair an e4m3 row is judged on: 2 x 32 rows spread over the
  // sequence (fp8::spread_rows), about a second of CPU at N = 16384, d_head 256.
  static constexpr int kE4m3RowsPerHead = 32;

  // fp8-track.md §2 on a sample of O's rows: the CPU references at those rows only, from the
  // codes and descales the kernel read.
  CheckOutcome check_e4m3_sample(cudaStream_t stream) const {
    FS_CUDA_CHECK(cudaStreamSynchronize(stream));
    const fp8::QuantizedInputs inputs = download_e4m3_inputs(
        problem_, q_.get(), k_.get(), v_.get(), static_cast<const float*>(q_descale_.get()),
        static_cast<const float*>(k_descale_.get()), static_cast<const float*>(v_descale_.get()));
    const fp8::RowSample sample = fp8::spread_rows(problem_, kE4m3RowsPerHead);
    const fp8::Verdict verdict = fp8::check(
        fp8::gather_rows(problem_, download_bf16(o_.get(), problem_.query_elements()), sample),
        fp8::reference_exact_rows(problem_, inputs, sample),
        fp8::reference_low_precision_rows(problem_, inputs, sample));
    return {verdict.passed, verdict.err_kernel,
            std::to_string(sample.rows.size()) + " sampled rows: " + verdict.summary(),
            verdict.err_kernel, verdict.rms_kernel};
  }

  Problem problem_;
  std::uint64_t seed_;
  DeviceBuffer q_, k_, v_, o_;
  DeviceBuffer d_o_, dq_, dk_, dv_, lse_;           // backward problems only
  DeviceBuffer q_descale_, k_descale_, v_descale_;  // e4m3 inputs only
  // The same descales per block, for a step with block descales (tensors(entry)).
  DeviceBuffer q_block_descale_, k_block_descale_, v_block_descale_;
  std::pair<int, int> block_rows_{0, 0};
  std::unique_ptr<ReferenceOutputs> references_;
  std::unique_ptr<BackwardReferenceOutputs> backward_references_;
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
    if (options.cache_mode == CacheMode::cold)
      flusher_ = std::make_unique<L2Flusher>(options.device);
    try {
      nvml_ =
          std::make_unique<measurement::NvmlSampler>(measurement::nvml_device_key(options.device));
      if (!nvml_->available())
        log_ << "note: no clock, power or throttling columns: " << nvml_->unavailable_reason()
             << "\n";
    } catch (const std::exception& error) {
      log_ << "note: no clock, power or throttling columns: " << error.what() << "\n";
      nvml_.reset();
    }
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

  // Measures items [start, end) of a unit: each item's setup and §1.4 check in turn, then every
  // item that passed its setup timed interleaved with the others (their rounds alternate, so
  // clock and power drift fall on all alike), then each one's hardware metrics. Returns one row
  // per item measured, in order. A fault that loses the CUDA context ends the unit there: the
  // rows up to it are returned and throw_after_ is set (a fault during the interleaved rounds
  // cannot be pinned on one contender: every row of the rounds reports it).
  std::vector<ResultRow> measure_unit(const std::vector<MeasurementItem>& items,
                                      std::size_t start) {
    std::vector<Prepared> prepared;
    for (std::size_t i = start; i < items.size(); ++i) {
      ++measured_;
      prepared.push_back(prepare(items[i]));
      if (throw_after_) break;
    }
    if (!throw_after_) time_interleaved(prepared);
    if (throw_after_) {
      // Items checked before the context was lost were never timed.
      for (Prepared& item : prepared)
        if (item.row.status.ok()) {
          item.row.status = RowStatus::skipped("not timed: " + *throw_after_);
          item.row.verdict = Verdict::unchecked;
        }
    } else if (profiler_) {
      const PhaseClock::Scope scope(phases_, PhaseClock::metrics);
      for (Prepared& item : prepared)
        if (item.row.status.ok()) collect_metrics(*item.item, item.launch, item.row);
    }
    std::vector<ResultRow> rows;
    for (Prepared& item : prepared) {
      if (item.row.status.ok()) {
        std::vector<std::string> warnings = sanity_warnings(item.row);
        if (!cell_warning_.empty()) warnings.push_back(cell_warning_);
        item.row.warnings = join_warnings(warnings);
        if (!item.row.warnings.empty())
          log_ << "warning: " << item.item->label() << ": " << item.row.warnings << "\n";
      }
      rows.push_back(std::move(item.row));
    }
    return rows;
  }

  // Set when a fault lost the CUDA context: the reason; the worker ends after its rows.
  std::optional<std::string> throw_after_;
  std::set<std::string> described_references_;  // "variant: description" lines already logged

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
  // One item after its setup and check: its row so far and how to launch it.
  struct Prepared {
    const MeasurementItem* item = nullptr;
    ResultRow row;
    std::function<void(cudaStream_t)> launch;  // set when the setup succeeded
  };

  Prepared prepare(const MeasurementItem& item) {
    Prepared prepared{&item, row_skeleton(item, options_, device_), {}};
    ResultRow& row = prepared.row;
    try {
      prepared.launch = set_up_and_check(item, row);
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
      prepared.launch = nullptr;
      if (cuda_context_broken()) {
        row.status.reason += " (the CUDA context is lost; this worker ends here)";
        throw_after_.emplace("the CUDA context was lost at " + item.label());
      }
    }
    return prepared;
  }

  // The item's inputs, launcher and resources, then §1.4 on one poisoned launch. Returns the
  // launch the timing repeats.
  std::function<void(cudaStream_t)> set_up_and_check(const MeasurementItem& item, ResultRow& row) {
    const std::uint64_t seed = input_seed_for(options_.seed, item.problem);
    if (!inputs_ || !inputs_->matches(item.problem)) {
      const PhaseClock::Scope scope(phases_, PhaseClock::inputs);
      inputs_.reset();  // free the previous problem's buffers first
      inputs_ = std::make_unique<InputSet>(item.problem, seed, stream_);
    }
    InputSet& inputs = *inputs_;
    std::optional<PhaseClock::Scope> setup_scope(std::in_place, phases_, PhaseClock::setup);
    row.input_seed = inputs.seed();

    std::function<void(cudaStream_t)> launch;
    // After the checked launch only: a baseline's gradients into our buffers (untimed).
    std::function<void(cudaStream_t)> deliver_checked_outputs;
    const bool backward = item.problem.pass == Pass::backward;
    if (item.is_baseline()) {
      const Baseline which = *item.subject.which_baseline();
      BaselineAttention& baseline = baseline_named(std::string(baseline_key(which)));
      baseline.prepare(item.problem);  // BaselineUnavailable: the row is skipped with the reason
      row.reference_variant = baseline.variant();
      row.reference_version = baseline.version();
      if (which == Baseline::fa2) row.fa2_entry_point = row.reference_variant;
      // What exactly runs, once per way in (the cuDNN version PyTorch carries, an engine, ...).
      if (described_references_.insert(row.reference_variant + ": " + baseline.description())
              .second)
        log_ << "reference " << baseline.name() << " (" << row.reference_variant
             << "): " << baseline.description() << "\n";
      if (backward) {
        launch = [&baseline, buffers = inputs.backward_buffers()](cudaStream_t stream) {
          baseline.run_backward(buffers, stream);
        };
        deliver_checked_outputs = [&baseline,
                                   buffers = inputs.backward_buffers()](cudaStream_t stream) {
          baseline.deliver_backward_outputs(buffers, stream);
        };
      } else if (needs_descales(item.problem.dtype)) {
        launch = [&baseline, &inputs](cudaStream_t stream) {
          baseline.run_e4m3(inputs.q(), inputs.k(), inputs.v(), inputs.o(), inputs.descales(),
                            stream);
        };
        deliver_checked_outputs = [&baseline, &inputs](cudaStream_t stream) {
          baseline.deliver_e4m3_output(inputs.o(), stream);
        };
      } else
        launch = [&baseline, &inputs](cudaStream_t stream) {
          baseline.run(inputs.q(), inputs.k(), inputs.v(), inputs.o(), stream);
        };
    } else if (backward) {
      const KernelEntry& entry = built_kernels().find(*item.subject.step(), *item.config);
      const BackwardTensors tensors = inputs.backward_tensors();
      validate_backward_launch(entry, tensors, compute_capability_);
      const std::size_t workspace_bytes =
          entry.backward_workspace_bytes(make_backward_args(entry, tensors, nullptr));
      // Shared by the launch's copies (the timing engine keeps one per contender).
      const auto workspace =
          std::make_shared<DeviceBuffer>(std::max<std::size_t>(workspace_bytes, 1));
      // All-ones bytes are NaN as fp32 and 16-bit values: the checked launch below must
      // initialize every workspace word it reads (backward-track.md §1.1).
      FS_CUDA_CHECK(cudaMemsetAsync(workspace->get(), 0xFF, workspace_bytes, stream_));
      const BackwardArgs args = make_backward_args(entry, tensors, workspace->get());
      launch = [&entry, args, workspace](cudaStream_t stream) {
        FS_CUDA_CHECK(entry.launch_backward(args, stream));
      };
      const KernelResources resources = kernel_resources(entry);
      row.registers = resources.registers_per_thread;
      row.smem_bytes = resources.shared_bytes_per_cta;
      row.local_bytes = resources.local_bytes_per_thread;
      inject_test_fault_if_requested(item, stream_);
    } else {
      const KernelEntry& entry = built_kernels().find(*item.subject.step(), *item.config);
      const AttentionTensors tensors = inputs.tensors(entry);
      validate_launch(entry, tensors, compute_capability_);
      const ForwardArgs args = make_forward_args(entry, tensors);
      launch = [&entry, args](cudaStream_t stream) { FS_CUDA_CHECK(entry.launch(args, stream)); };
      const KernelResources resources = kernel_resources(entry);
      row.registers = resources.registers_per_thread;
      row.smem_bytes = resources.shared_bytes_per_cta;
      row.local_bytes = resources.local_bytes_per_thread;
      inject_test_fault_if_requested(item, stream_);
    }

    setup_scope.reset();
    // The rule before timing (§1.4 on O, backward-track.md §2 on dQ, dK and dV): poisoned
    // outputs, one launch, both references.
    const PhaseClock::Scope check_scope(phases_, PhaseClock::check);
    inputs.poison_outputs(stream_);
    launch(stream_);
    if (deliver_checked_outputs) deliver_checked_outputs(stream_);
    FS_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const CheckOutcome verdict = inputs.check(stream_);
    row.verdict = verdict.passed ? Verdict::pass : Verdict::fail;
    row.max_error = verdict.max_error;
    row.max_error_fp64 = verdict.max_error_fp64;
    row.rms_error_fp64 = verdict.rms_error_fp64;
    if (!verdict.passed)
      log_ << "warning: " << item.label() << " fails the "
           << (backward ? "backward-track.md §2" : "§1.4") << " check: " << verdict.summary << "\n";
    return launch;
  }

  // Times every prepared item that passed its setup, interleaved in rounds, and fills their
  // rows: the median of the rounds with its interval, each kernel's % of each reference (pass 1)
  // round by round with its interval, and the GPU's clock, power and throttling meanwhile.
  void time_interleaved(std::vector<Prepared>& prepared) {
    std::vector<measurement::Contender> contenders;
    std::vector<Prepared*> timed;
    for (Prepared& item : prepared)
      if (item.row.status.ok() && item.launch) {
        contenders.push_back({item.item->label(), item.launch});
        timed.push_back(&item);
      }
    if (contenders.empty()) return;
    // Each kernel against the first pass of each reference in the cell.
    std::vector<measurement::RatioPair> pairs;
    std::map<std::pair<std::size_t, Baseline>, std::size_t> pair_index;
    for (std::size_t k = 0; k < timed.size(); ++k) {
      if (timed[k]->item->is_baseline()) continue;
      for (std::size_t b = 0; b < timed.size(); ++b) {
        const MeasurementItem& reference = *timed[b]->item;
        if (!reference.is_baseline() || reference.reference_pass > 1) continue;
        pair_index[{k, *reference.subject.which_baseline()}] = pairs.size();
        pairs.push_back({k, b});
      }
    }
    const PhaseClock::Scope scope(phases_, PhaseClock::timing);
    cell_warning_.clear();
    measurement::NvmlSummary nvml;
    measurement::RoundHooks hooks;
    if (nvml_ && nvml_->available()) {
      hooks.before_timed_rounds = [this] { nvml_->start(); };
      hooks.after_timed_rounds = [this, &nvml] { nvml = nvml_->stop(); };
    }
    std::function<void(cudaStream_t)> flush;
    if (flusher_) flush = [this](cudaStream_t stream) { flusher_->flush(stream); };
    measurement::InterleavedResult result;
    try {
      result = measurement::measure_interleaved(std::move(contenders), pairs, options_.interleaved,
                                                stream_, hooks, flush);
    } catch (const std::exception& error) {
      const bool lost = cuda_context_broken();
      for (Prepared* item : timed) {
        item->row.status = RowStatus::fault(std::string("during the interleaved rounds of this "
                                                        "problem's kernels and references: ") +
                                            error.what());
        item->row.verdict = Verdict::unchecked;
      }
      if (lost) throw_after_.emplace("the CUDA context was lost during the interleaved rounds");
      return;
    }
    log_ << "rounds: " << timed.front()->item->problem.seq_len << " " << result.summary()
         << (nvml.samples > 0 ? "; " + nvml.text() : std::string()) << "\n";
    cell_warning_ = nvml.warning();
    if (!result.pattern.note.empty())
      cell_warning_ += (cell_warning_.empty() ? "" : "; ") + result.pattern.note;
    for (std::size_t k = 0; k < timed.size(); ++k) {
      ResultRow& row = timed[k]->row;
      const measurement::ContenderResult& contender = result.contenders[k];
      row.rounds = result.rounds;
      row.runs = result.rounds * contender.launches_per_round;
      row.median_ms = contender.time.median;
      row.min_ms = contender.time.min;
      row.max_ms = contender.time.max;
      if (contender.time.interval) {
        row.ci_low_ms = contender.time.interval->lower;
        row.ci_high_ms = contender.time.interval->upper;
      }
      // A causal row counts half the FLOP, a backward one 2.5 times (problem.hpp).
      row.tflops = tflops_of(matmul_flops(timed[k]->item->problem), row.median_ms);
      row.seed_attn_tflops =
          tflops_of(seed_attention_flops(timed[k]->item->problem), row.median_ms);
      row.launch_pattern = std::string(measurement::launch_pattern_name(result.pattern.pattern));
      row.stop_reason = std::string(measurement::stop_reason_name(result.stop_reason));
      for (const Baseline baseline : kBaselines) {
        const auto found = pair_index.find({k, baseline});
        if (found == pair_index.end()) continue;
        const measurement::MedianEstimate& pct = result.ratios[found->second].pct;
        (baseline == Baseline::fa2 ? row.pct_fa2 : row.pct_cudnn) = pct.median;
        if (pct.interval) {
          (baseline == Baseline::fa2 ? row.pct_fa2_low : row.pct_cudnn_low) = pct.interval->lower;
          (baseline == Baseline::fa2 ? row.pct_fa2_high : row.pct_cudnn_high) = pct.interval->upper;
        }
      }
      if (nvml.sm_clock_median_mhz) row.sm_clock_mhz = static_cast<int>(*nvml.sm_clock_median_mhz);
      if (nvml.sm_clock_min_mhz) row.sm_clock_min_mhz = static_cast<int>(*nvml.sm_clock_min_mhz);
      if (nvml.sm_clock_max_mhz) row.sm_clock_max_mhz = static_cast<int>(*nvml.sm_clock_max_mhz);
      row.power_mean_w = nvml.power_mean_w;
      row.power_max_w = nvml.power_max_w;
      row.power_limit_w = nvml.power_limit_w;
      if (nvml.temperature_max_c) row.temperature_max_c = static_cast<int>(*nvml.temperature_max_c);
      if (nvml.reasons_known) {
        std::vector<std::string> held;
        for (const std::string& name : measurement::clocks_event_reason_names(
                 nvml.reasons_seen & measurement::kThrottleReasons))
          held.push_back(name);
        row.clock_reasons = text::join(held, " + ");
      }
    }
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

  const SweepOptions options_;  // a copy: the job it came from may end first
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
  // The GPU's clock, power and throttling while a cell's rounds run; null without NVML.
  std::unique_ptr<measurement::NvmlSampler> nvml_;
  std::string cell_warning_;  // the current cell's: measured under a power cap, a pattern fallback
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
  row.problem = item.problem;
  row.verdict = Verdict::unchecked;
  row.device = device.name;
  row.device_index = device.index;
  row.device_uuid = device.uuid;
  row.cache_mode = std::string(cache_mode_name(options.cache_mode));
  row.git_commit = std::string(source_state().commit);
  row.git_dirty = source_state().dirty;
  row.host = host_name();
  row.run_id = options.run_id;
  row.locked_sm_clock_mhz = options.locked_sm_clock_mhz;
  if (item.is_baseline()) row.reference_pass = item.reference_pass;
  row.input_seed = input_seed_for(options.seed, item.problem);
  return row;
}

// ---- The job: settings and plan as data -----------------------------------------------------

namespace {

constexpr std::string_view kJobHeader = "flashscope-worker-job 1";
constexpr std::string_view kJobEnd = "end";

// A double that reads back as the same value.
std::string exact_number(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

[[noreturn]] void reject_job_line(std::size_t index, const std::string& line,
                                  const std::string& problem) {
  throw std::invalid_argument("sweep worker job, line " + std::to_string(index + 1) + " " +
                              text::quoted(line) + ": " + problem);
}

}  // namespace

std::string format_worker_job(const SweepOptions& options, const SweepPlan& plan) {
  std::string job = std::string(kJobHeader) + "\n";
  const auto setting = [&job](std::string_view name, const std::string& value) {
    job += "setting " + std::string(name) + " " + value + "\n";
  };
  setting("device", std::to_string(options.device));
  setting("seed", std::to_string(options.seed));
  setting("run_id", options.run_id);
  if (options.locked_sm_clock_mhz)
    setting("locked_sm_clock_mhz", std::to_string(*options.locked_sm_clock_mhz));
  const measurement::InterleavedSettings& timing = options.interleaved;
  setting("timing.ci_target", exact_number(timing.stopping.target_relative_width));
  setting("timing.min_rounds", std::to_string(timing.stopping.min_rounds));
  setting("timing.max_rounds", std::to_string(timing.stopping.max_rounds));
  setting("timing.cell_seconds", exact_number(timing.stopping.max_seconds));
  setting("timing.pattern", std::string(measurement::launch_pattern_name(timing.pattern)));
  setting("timing.gap_us", exact_number(timing.gap_us));
  setting("timing.batch_ms", exact_number(timing.batch_target_ms));
  setting("timing.cache_mode", std::string(cache_mode_name(options.cache_mode)));
  setting("metrics", options.collect_metrics ? "on" : "off");
  for (const std::string& metric : options.extra_metrics)
    setting("extra_metric", metric);
  setting("metric_runs", std::to_string(options.metric_runs));
  for (const SweepUnit& unit : plan.units) {
    job += "unit " + unit.name + "\n";
    for (const MeasurementItem& item : unit.items)
      job += "item " + item.subject.text() + "\t" +
             (item.config ? to_short_form(*item.config) : std::string()) + "\t" +
             problem_record(item.problem) + "\t" + (item.recorded ? "1" : "0") + "\t" +
             std::to_string(item.reference_pass) + "\n";
  }
  job += std::string(kJobEnd) + "\n";
  return job;
}

WorkerJob parse_worker_job(const std::vector<std::string>& lines) {
  WorkerJob job;
  job.options.extra_metrics.clear();
  if (lines.empty() || lines.front() != kJobHeader)
    throw std::invalid_argument("sweep worker job: the first line is not '" +
                                std::string(kJobHeader) + "'");
  const auto integer = [](std::size_t index, const std::string& line, std::string_view text) {
    bool negative = text.starts_with('-');
    const auto value = text::parse_decimal(negative ? text.substr(1) : text, std::int64_t{1} << 62);
    if (!value) reject_job_line(index, line, "not an integer");
    return negative ? -*value : *value;
  };
  const auto number = [](std::size_t index, const std::string& line, std::string_view text) {
    const std::string copy(text);
    char* end = nullptr;
    const double value = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size())
      reject_job_line(index, line, "not a number");
    return value;
  };
  bool ended = false;
  for (std::size_t index = 1; index < lines.size(); ++index) {
    const std::string& line = lines[index];
    if (ended) reject_job_line(index, line, "after the end of the job");
    if (line == kJobEnd) {
      ended = true;
      continue;
    }
    const std::size_t space = line.find(' ');
    const std::string_view kind = std::string_view(line).substr(0, space);
    const std::string_view rest =
        space == std::string::npos ? std::string_view() : std::string_view(line).substr(space + 1);
    if (kind == "setting") {
      const std::size_t separator = rest.find(' ');
      if (separator == std::string_view::npos)
        reject_job_line(index, line, "a setting needs a value");
      const std::string_view name = rest.substr(0, separator);
      const std::string_view value = rest.substr(separator + 1);
      SweepOptions& o = job.options;
      if (name == "device") {
        o.device = static_cast<int>(integer(index, line, value));
      } else if (name == "seed") {
        const auto seed = text::parse_decimal(value, INT64_MAX);
        if (!seed) reject_job_line(index, line, "not a seed");
        o.seed = static_cast<std::uint64_t>(*seed);
      } else if (name == "run_id") {
        o.run_id = std::string(value);
      } else if (name == "locked_sm_clock_mhz") {
        o.locked_sm_clock_mhz = static_cast<int>(integer(index, line, value));
      } else if (name == "timing.ci_target") {
        o.interleaved.stopping.target_relative_width = number(index, line, value);
      } else if (name == "timing.min_rounds") {
        o.interleaved.stopping.min_rounds = static_cast<int>(integer(index, line, value));
      } else if (name == "timing.max_rounds") {
        o.interleaved.stopping.max_rounds = static_cast<int>(integer(index, line, value));
      } else if (name == "timing.cell_seconds") {
        o.interleaved.stopping.max_seconds = number(index, line, value);
      } else if (name == "timing.pattern") {
        const auto pattern = measurement::launch_pattern_from_string(value);
        if (!pattern) reject_job_line(index, line, "not a launch pattern");
        o.interleaved.pattern = *pattern;
      } else if (name == "timing.gap_us") {
        o.interleaved.gap_us = number(index, line, value);
      } else if (name == "timing.batch_ms") {
        o.interleaved.batch_target_ms = number(index, line, value);
      } else if (name == "timing.cache_mode") {
        if (value != "warm" && value != "cold") reject_job_line(index, line, "not warm or cold");
        o.cache_mode = value == "cold" ? CacheMode::cold : CacheMode::warm;
      } else if (name == "metrics") {
        if (value != "on" && value != "off") reject_job_line(index, line, "not on or off");
        o.collect_metrics = value == "on";
      } else if (name == "extra_metric") {
        o.extra_metrics.emplace_back(value);
      } else if (name == "metric_runs") {
        o.metric_runs = static_cast<int>(integer(index, line, value));
      } else {
        reject_job_line(index, line, "unknown setting");
      }
    } else if (kind == "unit") {
      job.units.push_back({std::string(rest), {}});
    } else if (kind == "item") {
      if (job.units.empty()) reject_job_line(index, line, "an item before the first unit");
      const std::vector<std::string> fields = text::split_list(rest, '\t');
      if (fields.size() != 5) reject_job_line(index, line, "an item has 5 tab-separated fields");
      MeasurementItem item;
      const auto subject = RowSubject::from_text(fields[0]);
      if (!subject || subject->is_ceiling()) reject_job_line(index, line, "not a step or baseline");
      item.subject = *subject;
      try {
        if (!fields[1].empty()) item.config = parse_short_form(fields[1]);
        item.problem = parse_problem_record(fields[2]);
      } catch (const std::invalid_argument& error) {
        reject_job_line(index, line, error.what());
      }
      if (item.subject.is_kernel() != item.config.has_value())
        reject_job_line(index, line, "a kernel item has a config, a baseline item none");
      if (fields[3] != "0" && fields[3] != "1") reject_job_line(index, line, "recorded is 0 or 1");
      item.recorded = fields[3] == "1";
      item.reference_pass = static_cast<int>(integer(index, line, fields[4]));
      job.units.back().items.push_back(std::move(item));
    } else {
      reject_job_line(index, line, "not a setting, unit, item or end line");
    }
  }
  if (!ended) throw std::invalid_argument("sweep worker job: it ends before its 'end' line");
  return job;
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

int run_sweep_worker(int row_fd, int command_fd) {
  // If the sweep is killed (a timeout, a signal to its process alone), its worker goes too instead
  // of measuring on; should the parent die before this line, the closed pipe stops the worker.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  FdOutputBuffer buffer(row_fd);
  std::ostream rows(&buffer);
  std::size_t written = 0;
  std::unique_ptr<UnitRunner> runner;
  try {
    LineReader commands(command_fd);
    std::string line;
    // The job first: settings and the plan's units, up to its "end" line.
    std::vector<std::string> job_lines;
    while (commands.next(line)) {
      job_lines.push_back(line);
      if (line == kJobEnd) break;
    }
    const WorkerJob job = parse_worker_job(job_lines);
    runner = std::make_unique<UnitRunner>(job.options, std::cerr);
    ResultsCsvWriter writer(rows, extra_metric_columns(job.options));
    while (commands.next(line)) {
      const WorkerCommand command = parse_worker_command(line);
      if (command.unit >= job.units.size())
        throw std::invalid_argument("sweep worker: unit " + std::to_string(command.unit) +
                                    " does not exist (the plan has " +
                                    std::to_string(job.units.size()) + ")");
      const SweepUnit& unit = job.units[command.unit];
      if (command.start > unit.items.size())
        throw std::invalid_argument("sweep worker: unit " + std::to_string(command.unit) +
                                    " has no item " + std::to_string(command.start));
      for (const ResultRow& row : runner->measure_unit(unit.items, command.start)) {
        writer.write(row);
        ++written;
      }
      if (runner->throw_after_) throw CudaContextLost(*runner->throw_after_);
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
  if (runner) std::cerr << runner->time_summary() << "\n";
  return kWorkerDone;
}

}  // namespace flashscope
