#include "profiling/check.hpp"

#include <cuda_runtime.h>

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <algorithm>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "configs/config_sets.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/device_buffer.hpp"
#include "kernels/common/problem_axes.hpp"
#include "configs/launch_validation.hpp"
#include "profiling/device.hpp"
#include "profiling/npy.hpp"

namespace flashscope {

namespace {

// `mkdir -p`. Deliberately not std::filesystem: libtorch (linked for the fa2 reference) exports
// its own statically linked copy of those symbols, which a newer libstdc++ caller can crash in
// (pytorch/pytorch#133437).
void make_directories(const std::string& path) {
  for (std::size_t end = 1; end <= path.size(); ++end) {
    if (end != path.size() && path[end] != '/') continue;
    const std::string prefix = path.substr(0, end);
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      throw std::runtime_error("cannot create the folder " + prefix + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    throw std::runtime_error(path + " exists and is not a folder");
}

}  // namespace

const KernelEntry& resolve_check_kernel(const CheckRequest& request,
                                        const KernelRegistry& registry) {
  const Problem& problem = request.problem;
  if (const auto violation = problem_violation(problem))
    throw std::invalid_argument("the problem " + problem_label(problem) + ": " + *violation);
  configs::step_info(request.step);  // throws std::out_of_range naming the valid steps
  // A dtype the step does not run has no kernel to look up: it is refused by name (the dtype
  // axis' sentence, naming the steps that run it), as a sweep and launch validation refuse it,
  // not reported as a config this build lacks.
  if (!configs::step_descriptor(request.step).dtypes.contains(problem.dtype))
    throw LaunchValidationError(*configs::step_refusal_message(request.step, problem));
  if (request.config) {
    if (request.config->dtype != problem.dtype || request.config->d_head != problem.d_head)
      throw std::invalid_argument("the config " + to_short_form(*request.config) +
                                  " does not compute the problem " + problem_label(problem) +
                                  " (its dtype and d_head must be the problem's)");
    return find_kernel(registry, request.step, *request.config);
  }
  // The step's config at the problem's d_head, or the one the step chooses for this problem
  // (StepDescriptor::problem_config, step 32); a step that does not run the d_head is named with
  // the steps that do (std::invalid_argument).
  const KernelConfig headline = configs::config_for_problem(
      request.step,
      configs::with_dtype(configs::headline_config(request.step, problem.d_head), problem.dtype),
      problem);
  if (const KernelEntry* entry = registry.try_find(request.step, headline)) return *entry;
  std::vector<const KernelEntry*> candidates;
  for (const KernelEntry* entry : registry.entries_of_step(request.step))
    if (entry->config.dtype == problem.dtype && entry->config.d_head == problem.d_head)
      candidates.push_back(entry);
  if (candidates.size() == 1) return *candidates.front();
  if (candidates.empty()) return registry.find(request.step, headline);  // throws, names closest
  std::string message = "step " + step_name(request.step) + " has " +
                        std::to_string(candidates.size()) + " " +
                        std::string(dtype_lower_name(problem.dtype)) + " kernels built at d_head " +
                        std::to_string(problem.d_head) + "; choose one with --config:";
  for (const KernelEntry* entry : candidates)
    message += "\n  " + to_short_form(entry->config);
  throw std::invalid_argument(message);
}

void validate_request_problem(const KernelEntry& entry, const Problem& problem) {
  if (auto reason = launch_refusal(entry, problem)) throw LaunchValidationError(*reason);
}

const std::vector<std::string>& check_dump_file_names(Pass pass) {
  static const std::vector<std::string> forward = {
      "q.npy", "k.npy", "v.npy", "o.npy", "reference_low_precision.npy", "reference_fp32.npy"};
  // The forward's O is the references' (gpu_reference_forward_with_lse); each gradient with its
  // two references.
  static const std::vector<std::string> backward = {"q.npy",
                                                    "k.npy",
                                                    "v.npy",
                                                    "o.npy",
                                                    "do.npy",
                                                    "dq.npy",
                                                    "dk.npy",
                                                    "dv.npy",
                                                    "dq_reference_low_precision.npy",
                                                    "dk_reference_low_precision.npy",
                                                    "dv_reference_low_precision.npy",
                                                    "dq_reference_fp32.npy",
                                                    "dk_reference_fp32.npy",
                                                    "dv_reference_fp32.npy"};
  return pass == Pass::backward ? backward : forward;
}

namespace {

// The backward half of run_check: the references' forward writes O and the log-sum-exp, the
// step's backward runs with dQ, dK, dV and its workspace poisoned, and each gradient is judged on
// its own (backward-track.md §2).
void run_backward_check(const CheckRequest& request, const KernelEntry& entry,
                        const DeviceDescription& device, CheckReport& report) {
  const Problem& problem = request.problem;
  const std::size_t q_bytes =
      static_cast<std::size_t>(problem.query_elements()) * element_bytes(problem.dtype);
  const std::size_t kv_bytes =
      static_cast<std::size_t>(problem.key_value_elements()) * element_bytes(problem.dtype);
  const std::size_t lse_bytes = sizeof(float) * static_cast<std::size_t>(problem.batch) *
                                problem.heads * static_cast<std::size_t>(problem.seq_len);
  const DeviceBuffer q(q_bytes), k(kv_bytes), v(kv_bytes), o(q_bytes), d_o(q_bytes), lse(lse_bytes);
  const DeviceBuffer dq(q_bytes), dk(kv_bytes), dv(kv_bytes);
  const std::array<std::int64_t, 4> q_dims{problem.batch, problem.seq_len, problem.heads,
                                           problem.d_head};
  const std::array<std::int64_t, 4> kv_dims{problem.batch, problem.seq_len, problem.heads_kv,
                                            problem.d_head};
  const auto view = [&](const void* data, const std::array<std::int64_t, 4>& dims) {
    return TensorView{data, problem.dtype, MemoryLocation::device, dims, contiguous_strides(dims)};
  };
  BackwardTensors tensors{view(q.get(), q_dims),   view(k.get(), kv_dims),  view(v.get(), kv_dims),
                          view(o.get(), q_dims),   view(d_o.get(), q_dims), view(dq.get(), q_dims),
                          view(dk.get(), kv_dims), view(dv.get(), kv_dims)};
  tensors.softmax_lse = static_cast<const float*>(lse.get());
  tensors.causal = problem.causal;
  validate_backward_launch(entry, tensors, device.compute_capability, request.device);

  fill_random_normal(q.get(), problem.dtype, problem.query_elements(), request.seed * 3 + 0,
                     request.input_scale);
  fill_random_normal(k.get(), problem.dtype, problem.key_value_elements(), request.seed * 3 + 1,
                     request.input_scale);
  fill_random_normal(v.get(), problem.dtype, problem.key_value_elements(), request.seed * 3 + 2,
                     request.input_scale);
  fill_random_normal(d_o.get(), problem.dtype, problem.query_elements(),
                     check_d_o_seed(request.seed), request.input_scale);
  // The forward a backward step differentiates: no forward step is involved, so a failure here
  // is the backward's alone.
  gpu_reference_forward_with_lse(problem, problem.dtype, q.get(), k.get(), v.get(), o.get(),
                                 static_cast<float*>(lse.get()));
  const BackwardReferenceOutputs references(problem, problem.dtype, q.get(), k.get(), v.get(),
                                            o.get(), d_o.get(),
                                            static_cast<const float*>(lse.get()));
  const BackwardArgs sizing = make_backward_args(entry, tensors, nullptr);
  const DeviceBuffer workspace(std::max<std::size_t>(entry.backward_workspace_bytes(sizing), 1));
  poison_output(dq.get(), problem.dtype, problem.query_elements());
  poison_output(dk.get(), problem.dtype, problem.key_value_elements());
  poison_output(dv.get(), problem.dtype, problem.key_value_elements());
  // All-ones bytes are NaN as fp32 and as 16-bit values: a workspace word the launch reads
  // before it writes it shows up in the gradients.
  FS_CUDA_CHECK(cudaMemset(workspace.get(), 0xFF, entry.backward_workspace_bytes(sizing)));
  FS_CUDA_CHECK(
      entry.launch_backward(make_backward_args(entry, tensors, workspace.get()), nullptr));
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  report.backward = references.check(dq.get(), dk.get(), dv.get());

  if (!request.dump_dir.empty()) {
    make_directories(request.dump_dir);
    const std::vector<std::int64_t> q_shape(q_dims.begin(), q_dims.end());
    const std::vector<std::int64_t> kv_shape(kv_dims.begin(), kv_dims.end());
    const std::pair<const void*, const std::vector<std::int64_t>*> tensors_to_dump[] = {
        {q.get(), &q_shape},
        {k.get(), &kv_shape},
        {v.get(), &kv_shape},
        {o.get(), &q_shape},
        {d_o.get(), &q_shape},
        {dq.get(), &q_shape},
        {dk.get(), &kv_shape},
        {dv.get(), &kv_shape},
        {references.low_precision(0), &q_shape},
        {references.low_precision(1), &kv_shape},
        {references.low_precision(2), &kv_shape},
        {references.fp32(0), &q_shape},
        {references.fp32(1), &kv_shape},
        {references.fp32(2), &kv_shape}};
    for (std::size_t i = 0; i < std::size(tensors_to_dump); ++i) {
      const std::string path = request.dump_dir + "/" + check_dump_file_names(Pass::backward).at(i);
      const auto& [data, shape] = tensors_to_dump[i];
      write_device_tensor_npy(path, problem.dtype, *shape, data);
      report.dumped_files.push_back(path);
    }
  }
}

// The forward of e4m3 inputs (fp8-track.md §2): inputs drawn in fp32 (Q and K with outlier
// channels if asked), rotated if asked, quantized on the device per (sample, head) or per tile, O
// (bf16) poisoned, one launch, then both references on the CPU from the same codes and descales:
// R_ref in fp64, R_lp in the FP8 kernel's precisions; and the fp64 attention on the fp32 values
// before quantization and rotation, for the error quantization adds (§4.2). CPU work grows with
// batch x heads x seq_len² x d_head: check small problems (--batch, --heads).
void run_fp8_check(const CheckRequest& request, const KernelEntry& entry,
                   const DeviceDescription& device, CheckReport& report) {
  const Problem& problem = request.problem;
  if (!request.dump_dir.empty())
    throw std::invalid_argument("--dump writes 16-bit tensors only; e4m3 checks have no dump yet");
  const auto q_count = static_cast<std::size_t>(problem.query_elements());
  const auto kv_count = static_cast<std::size_t>(problem.key_value_elements());
  // Per tile: a Q tile holds B_r / group positions of each of its heads (packing), a KV tile B_c
  // keys; per (sample, head): one block of seq_len positions.
  const int q_rows = per_tile(request.quantization)
                         ? std::min(problem.seq_len, entry.config.B_r / problem.group_size())
                         : problem.seq_len;
  const int kv_rows = per_tile(request.quantization) ? std::min(problem.seq_len, entry.config.B_c)
                                                     : problem.seq_len;
  const auto blocks = [&](int rows) { return (problem.seq_len + rows - 1) / rows; };
  const auto q_descales = static_cast<std::size_t>(problem.batch) * problem.heads * blocks(q_rows);
  const auto kv_descales =
      static_cast<std::size_t>(problem.batch) * problem.heads_kv * blocks(kv_rows);
  const DeviceBuffer q(q_count), k(kv_count), v(kv_count);
  const DeviceBuffer o(q_count * element_bytes(output_dtype(problem.dtype)));
  const DeviceBuffer q_descale(q_descales * sizeof(float)), k_descale(kv_descales * sizeof(float)),
      v_descale(kv_descales * sizeof(float));
  const std::array<std::int64_t, 4> q_dims{problem.batch, problem.seq_len, problem.heads,
                                           problem.d_head};
  const std::array<std::int64_t, 4> kv_dims{problem.batch, problem.seq_len, problem.heads_kv,
                                            problem.d_head};
  const auto view = [&](const void* data, DType dtype, const std::array<std::int64_t, 4>& dims) {
    return TensorView{data, dtype, MemoryLocation::device, dims, contiguous_strides(dims)};
  };
  const auto descale_view = [&](const DeviceBuffer& buffer, int heads, int rows) {
    const std::int64_t per_head = blocks(rows);
    return DescaleView{static_cast<const float*>(buffer.get()),
                       MemoryLocation::device,
                       {problem.batch, heads},
                       {heads * per_head, per_head},
                       rows == problem.seq_len ? 0 : rows};
  };
  AttentionTensors tensors{view(q.get(), problem.dtype, q_dims),
                           view(k.get(), problem.dtype, kv_dims),
                           view(v.get(), problem.dtype, kv_dims),
                           view(o.get(), output_dtype(problem.dtype), q_dims), problem.causal};
  tensors.q_descale = descale_view(q_descale, problem.heads, q_rows);
  tensors.k_descale = descale_view(k_descale, problem.heads_kv, kv_rows);
  tensors.v_descale = descale_view(v_descale, problem.heads_kv, kv_rows);
  validate_launch(entry, tensors, device.compute_capability, request.device);

  // Seeds 3s, 3s + 1, 3s + 2 as for 16-bit inputs: the values fill_random_e4m3 quantizes, in
  // fp32 first. Outlier channels in Q and K only (fp8-track.md §2).
  const DeviceBuffer q_values(q_count * sizeof(float)), k_values(kv_count * sizeof(float)),
      v_values(kv_count * sizeof(float));
  const auto values = [](const DeviceBuffer& buffer) { return static_cast<float*>(buffer.get()); };
  fill_random_fp32(values(q_values), problem.batch, problem.seq_len, problem.heads, problem.d_head,
                   request.seed * 3 + 0, request.input_scale, request.outliers);
  fill_random_fp32(values(k_values), problem.batch, problem.seq_len, problem.heads_kv,
                   problem.d_head, request.seed * 3 + 1, request.input_scale, request.outliers);
  fill_random_fp32(values(v_values), problem.batch, problem.seq_len, problem.heads_kv,
                   problem.d_head, request.seed * 3 + 2, request.input_scale, false);
  const auto download_floats = [](const DeviceBuffer& buffer, std::size_t count) {
    std::vector<float> host(count);
    FS_CUDA_CHECK(
        cudaMemcpy(host.data(), buffer.get(), count * sizeof(float), cudaMemcpyDeviceToHost));
    return std::vector<double>(host.begin(), host.end());
  };
  // The truth the accuracy step is measured against: the unquantized, unrotated values.
  const std::vector<double> truth =
      cpu_attention_fp64(problem, download_floats(q_values, q_count),
                         download_floats(k_values, kv_count), download_floats(v_values, kv_count));
  if (rotates(request.quantization)) {
    // One rotation for Q and K: Q·Kᵀ is unchanged (fp8_reference.hpp, incoherent processing).
    const std::vector<int> signs = fp8::rotation_signs(problem.d_head, kRotationSeed);
    const std::vector<float> sign_values(signs.begin(), signs.end());
    const DeviceBuffer device_signs(sign_values.size() * sizeof(float));
    FS_CUDA_CHECK(cudaMemcpy(device_signs.get(), sign_values.data(),
                             sign_values.size() * sizeof(float), cudaMemcpyHostToDevice));
    const auto signs_pointer = static_cast<const float*>(device_signs.get());
    rotate_rows_fp32(values(q_values), static_cast<std::int64_t>(q_count) / problem.d_head,
                     problem.d_head, signs_pointer);
    rotate_rows_fp32(values(k_values), static_cast<std::int64_t>(kv_count) / problem.d_head,
                     problem.d_head, signs_pointer);
    FS_CUDA_CHECK(cudaDeviceSynchronize());
  }
  quantize_e4m3(values(q_values), q.get(), static_cast<float*>(q_descale.get()), problem.batch,
                problem.seq_len, problem.heads, problem.d_head, q_rows);
  quantize_e4m3(values(k_values), k.get(), static_cast<float*>(k_descale.get()), problem.batch,
                problem.seq_len, problem.heads_kv, problem.d_head, kv_rows);
  // V's tile descales as power-of-two fractions of the head's: step 31 folds their ratio into P
  // before its e4m3 rounding, exact for a power of two (quantize_e4m3, docs/versions/31.md).
  quantize_e4m3(values(v_values), v.get(), static_cast<float*>(v_descale.get()), problem.batch,
                problem.seq_len, problem.heads_kv, problem.d_head, kv_rows, nullptr,
                /*power_of_two_ratios=*/per_tile(request.quantization));
  poison_output(o.get(), output_dtype(problem.dtype), problem.query_elements());
  FS_CUDA_CHECK(entry.launch(make_forward_args(entry, tensors), nullptr));
  FS_CUDA_CHECK(cudaDeviceSynchronize());

  const fp8::QuantizedInputs inputs = download_e4m3_inputs(
      problem, q.get(), k.get(), v.get(), static_cast<const float*>(q_descale.get()),
      static_cast<const float*>(k_descale.get()), static_cast<const float*>(v_descale.get()),
      q_rows, kv_rows);
  const std::vector<double> o_values = download_bf16(o.get(), problem.query_elements());
  report.fp8 = fp8::check(o_values, fp8::reference_exact(problem, inputs),
                          fp8::reference_low_precision(problem, inputs));
  UnquantizedError error;
  double squares = 0;
  for (std::size_t i = 0; i < o_values.size(); ++i) {
    const double difference = std::abs(o_values[i] - truth[i]);
    error.max_abs = std::max(error.max_abs, difference);  // NaN: counted by the verdict
    squares += difference * difference;
  }
  error.rms = std::sqrt(squares / static_cast<double>(o_values.size()));
  report.fp8_vs_unquantized = error;
  report.quantization = request.quantization;
  report.outliers = request.outliers;
}

}  // namespace

std::string_view quantization_text(E4m3Quantization quantization) {
  switch (quantization) {
    case E4m3Quantization::per_head:
      return "per-head";
    case E4m3Quantization::per_head_hadamard:
      return "per-head+hadamard";
    case E4m3Quantization::per_tile:
      return "per-tile";
    case E4m3Quantization::per_tile_hadamard:
      return "per-tile+hadamard";
  }
  return "?";
}

std::optional<E4m3Quantization> quantization_from_string(std::string_view text) {
  for (const E4m3Quantization quantization : kAllE4m3Quantizations)
    if (text == quantization_text(quantization)) return quantization;
  return std::nullopt;
}

fp8::QuantizedInputs download_e4m3_inputs(const Problem& problem, const void* q, const void* k,
                                          const void* v, const float* q_descale,
                                          const float* k_descale, const float* v_descale,
                                          int q_rows, int kv_rows) {
  const auto download = [&](const void* codes, int heads, const float* descales, int rows) {
    fp8::QuantizedTensor tensor;
    tensor.batch = problem.batch;
    tensor.seq_len = problem.seq_len;
    tensor.heads = heads;
    tensor.d_head = problem.d_head;
    // One descale per (sample, head) (fp8-track.md §1) or per block of `rows` positions (§4.2).
    tensor.block_rows = rows > 0 ? rows : problem.seq_len;
    tensor.codes.resize(static_cast<std::size_t>(problem.batch) * problem.seq_len * heads *
                        problem.d_head);
    tensor.descales.resize(static_cast<std::size_t>(problem.batch) * heads * tensor.blocks());
    FS_CUDA_CHECK(
        cudaMemcpy(tensor.codes.data(), codes, tensor.codes.size(), cudaMemcpyDeviceToHost));
    FS_CUDA_CHECK(cudaMemcpy(tensor.descales.data(), descales,
                             tensor.descales.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return tensor;
  };
  return {download(q, problem.heads, q_descale, q_rows),
          download(k, problem.heads_kv, k_descale, kv_rows),
          download(v, problem.heads_kv, v_descale, kv_rows)};
}

std::vector<double> download_bf16(const void* data, std::int64_t count) {
  std::vector<std::uint16_t> bits(static_cast<std::size_t>(count));
  FS_CUDA_CHECK(
      cudaMemcpy(bits.data(), data, bits.size() * sizeof(std::uint16_t), cudaMemcpyDeviceToHost));
  std::vector<double> values(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) {
    const std::uint32_t widened = static_cast<std::uint32_t>(bits[i]) << 16;  // bf16 -> fp32
    float value;
    std::memcpy(&value, &widened, sizeof(value));
    values[i] = value;
  }
  return values;
}

CheckReport run_check(const CheckRequest& request) {
  const KernelEntry& entry = resolve_check_kernel(request, built_kernels());
  validate_request_problem(entry, request.problem);
  const DeviceDescription device = describe_device(request.device);
  activate_device(request.device);

  CheckReport report;
  report.kernel = &entry;
  report.problem = request.problem;
  report.seed = request.seed;
  if (request.problem.pass == Pass::backward) {
    run_backward_check(request, entry, device, report);
    return report;
  }
  if (request.problem.dtype == DType::E4M3) {
    run_fp8_check(request, entry, device, report);
    return report;
  }
  const Problem& problem = request.problem;
  const std::size_t q_bytes =
      static_cast<std::size_t>(problem.query_elements()) * element_bytes(problem.dtype);
  const std::size_t kv_bytes =
      static_cast<std::size_t>(problem.key_value_elements()) * element_bytes(problem.dtype);
  const DeviceBuffer q(q_bytes), k(kv_bytes), v(kv_bytes), o(q_bytes);
  const std::array<std::int64_t, 4> q_dims{problem.batch, problem.seq_len, problem.heads,
                                           problem.d_head};
  const std::array<std::int64_t, 4> kv_dims{problem.batch, problem.seq_len, problem.heads_kv,
                                            problem.d_head};
  const auto view = [&](const void* data, const std::array<std::int64_t, 4>& dims) {
    return TensorView{data, problem.dtype, MemoryLocation::device, dims, contiguous_strides(dims)};
  };
  const AttentionTensors tensors{view(q.get(), q_dims), view(k.get(), kv_dims),
                                 view(v.get(), kv_dims), view(o.get(), q_dims), problem.causal};
  validate_launch(entry, tensors, device.compute_capability, request.device);

  // Same derivation as the sweep (and tests/support): Q, K, V seeds 3s, 3s+1, 3s+2.
  fill_random_normal(q.get(), problem.dtype, problem.query_elements(), request.seed * 3 + 0,
                     request.input_scale);
  fill_random_normal(k.get(), problem.dtype, problem.key_value_elements(), request.seed * 3 + 1,
                     request.input_scale);
  fill_random_normal(v.get(), problem.dtype, problem.key_value_elements(), request.seed * 3 + 2,
                     request.input_scale);
  const ReferenceOutputs references(problem, q.get(), k.get(), v.get());
  poison_output(o.get(), problem.dtype, problem.query_elements());
  FS_CUDA_CHECK(entry.launch(make_forward_args(entry, tensors), nullptr));
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  report.verdict = references.check(o.get());

  if (!request.dump_dir.empty()) {
    make_directories(request.dump_dir);
    const std::vector<std::int64_t> q_shape(q_dims.begin(), q_dims.end());
    const std::vector<std::int64_t> kv_shape(kv_dims.begin(), kv_dims.end());
    // K and V have heads_kv heads; the outputs and references have Q's shape.
    const std::pair<const void*, const std::vector<std::int64_t>*> tensors_to_dump[] = {
        {q.get(), &q_shape},
        {k.get(), &kv_shape},
        {v.get(), &kv_shape},
        {o.get(), &q_shape},
        {references.low_precision(), &q_shape},
        {references.fp32(), &q_shape}};
    for (std::size_t i = 0; i < std::size(tensors_to_dump); ++i) {
      const std::string path = request.dump_dir + "/" + check_dump_file_names().at(i);
      const auto& [data, shape] = tensors_to_dump[i];
      write_device_tensor_npy(path, problem.dtype, *shape, data);
      report.dumped_files.push_back(path);
    }
  }
  return report;
}

}  // namespace flashscope
