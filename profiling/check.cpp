#include "profiling/check.hpp"

#include <cuda_runtime.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "configs/config_sets.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/launch_validation.hpp"
#include "profiling/device.hpp"
#include "profiling/npy.hpp"

namespace flashscope {

namespace {

class DeviceTensor {
 public:
  explicit DeviceTensor(std::int64_t count) {
    FS_CUDA_CHECK(cudaMalloc(&data_, static_cast<std::size_t>(count) * kElementBytes));
  }
  ~DeviceTensor() { cudaFree(data_); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

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
  const AttentionShape& shape = request.shape;
  if (shape.batch <= 0 || shape.seq_len <= 0 || shape.heads <= 0 || shape.d_head <= 0)
    throw std::invalid_argument(
        "batch, seq_len, heads and d_head must be positive; got B=" + std::to_string(shape.batch) +
        " N=" + std::to_string(shape.seq_len) + " H=" + std::to_string(shape.heads) +
        " d=" + std::to_string(shape.d_head));
  configs::step_info(request.step);  // throws std::out_of_range naming the valid steps
  if (request.config) {
    if (request.dtype && *request.dtype != request.config->dtype)
      throw std::invalid_argument("--dtype " + std::string(dtype_lower_name(*request.dtype)) +
                                  " contradicts the config's dtype " +
                                  std::string(dtype_name(request.config->dtype)));
    return registry.find(request.step, *request.config);
  }
  const DType dtype = request.dtype.value_or(DType::FP16);
  // The step's config at the shape's d_head; a step that does not run it is named with the steps
  // that do (std::invalid_argument).
  const KernelConfig headline =
      configs::with_dtype(configs::headline_config(request.step, shape.d_head), dtype);
  if (const KernelEntry* entry = registry.try_find(request.step, headline)) return *entry;
  std::vector<const KernelEntry*> candidates;
  for (const KernelEntry* entry : registry.entries_of_step(request.step))
    if (entry->config.dtype == dtype && entry->config.d_head == shape.d_head)
      candidates.push_back(entry);
  if (candidates.size() == 1) return *candidates.front();
  if (candidates.empty()) return registry.find(request.step, headline);  // throws, names closest
  std::string message = "step " + std::to_string(request.step) + " has " +
                        std::to_string(candidates.size()) + " " +
                        std::string(dtype_lower_name(dtype)) + " kernels built at d_head " +
                        std::to_string(shape.d_head) + "; choose one with --config:";
  for (const KernelEntry* entry : candidates)
    message += "\n  " + to_short_form(entry->config);
  throw std::invalid_argument(message);
}

// The shape, dtype and step rules of launch validation need no GPU: check them first, so a bad
// request is named as such on any machine. Validation only inspects the descriptors, so a
// placeholder address stands in for the device buffers allocated later.
void validate_request_shape(const KernelEntry& entry, const AttentionShape& shape) {
  static const char kPlaceholder = 0;
  const std::array<std::int64_t, 4> dims{shape.batch, shape.seq_len, shape.heads, shape.d_head};
  const TensorView view{&kPlaceholder, entry.config.dtype, MemoryLocation::device, dims,
                        contiguous_strides(dims)};
  // Any GPU the kernel was compiled for: the device itself is checked once it is known.
  constexpr int kLowestSupportedComputeCapability = 80;
  const int compute_capability = entry.exact_compute_capability != 0
                                     ? entry.exact_compute_capability
                                     : kLowestSupportedComputeCapability;
  // The mask too: a causal request to a step without it is refused here, naming the steps that
  // have it.
  validate_launch(entry, {view, view, view, view, shape.causal}, compute_capability);
}

const std::vector<std::string>& check_dump_file_names() {
  static const std::vector<std::string> names = {
      "q.npy", "k.npy", "v.npy", "o.npy", "reference_low_precision.npy", "reference_fp32.npy"};
  return names;
}

CheckReport run_check(const CheckRequest& request) {
  const KernelEntry& entry = resolve_check_kernel(request, built_kernels());
  validate_request_shape(entry, request.shape);
  const DeviceDescription device = describe_device(request.device);
  activate_device(request.device);

  CheckReport report;
  report.kernel = &entry;
  report.dtype = entry.config.dtype;
  report.shape = request.shape;
  report.seed = request.seed;
  const AttentionShape& shape = request.shape;
  const std::int64_t count = shape.elements();
  const DeviceTensor q(count), k(count), v(count), o(count);
  const std::array<std::int64_t, 4> dims{shape.batch, shape.seq_len, shape.heads, shape.d_head};
  const auto view = [&](const void* data) {
    return TensorView{data, report.dtype, MemoryLocation::device, dims, contiguous_strides(dims)};
  };
  const AttentionTensors tensors{view(q.get()), view(k.get()), view(v.get()), view(o.get()),
                                 shape.causal};
  validate_launch(entry, tensors, device.compute_capability, request.device);

  // Same derivation as the sweep (and tests/support): Q, K, V seeds 3s, 3s+1, 3s+2.
  fill_random_normal(q.get(), report.dtype, count, request.seed * 3 + 0, request.input_scale);
  fill_random_normal(k.get(), report.dtype, count, request.seed * 3 + 1, request.input_scale);
  fill_random_normal(v.get(), report.dtype, count, request.seed * 3 + 2, request.input_scale);
  const ReferenceOutputs references(shape, report.dtype, q.get(), k.get(), v.get());
  poison_output(o.get(), report.dtype, count);
  FS_CUDA_CHECK(entry.launch(make_forward_args(entry, tensors), nullptr));
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  report.verdict = references.check(o.get());

  if (!request.dump_dir.empty()) {
    make_directories(request.dump_dir);
    const std::vector<std::int64_t> npy_shape(dims.begin(), dims.end());
    const void* tensors_to_dump[] = {
        q.get(), k.get(), v.get(), o.get(), references.low_precision(), references.fp32()};
    for (std::size_t i = 0; i < std::size(tensors_to_dump); ++i) {
      const std::string path = request.dump_dir + "/" + check_dump_file_names().at(i);
      const void* data = tensors_to_dump[i];
      write_device_tensor_npy(path, report.dtype, npy_shape, data);
      report.dumped_files.push_back(path);
    }
  }
  return report;
}

}  // namespace flashscope
