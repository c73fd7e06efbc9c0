// flashscope._core: the kernels built into this module, the C++ config record bound as
// flashscope.Config, and the forward pass on any CUDA array taken through DLPack. The Python
// package (flashscope/__init__.py) adds what depends on the caller's framework: its current
// stream and its allocator for the output. docs/python.md documents the API.
#include <cuda_runtime.h>
#include <pybind11/functional.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernels/common/problem_axes.hpp"
#include "configs/config_sets.hpp"
#include "explorer/python/dlpack.hpp"
#include "explorer/python/kernel_selection.hpp"
#include "kernels/common/build_info.hpp"
#include "kernels/common/config.hpp"
#include "kernels/common/cuda_check.hpp"
#include "configs/launch_validation.hpp"
#include "kernels/common/registry.hpp"
#include "kernels/common/tensor_map.hpp"
#include "kernels/common/device_buffer.hpp"
#include "profiling/measurement/interleaved.hpp"
#include "profiling/measurement/nvml_sampler.hpp"

namespace py = pybind11;

namespace flashscope::python {

namespace {

constexpr const char* kTensorArgumentNames[] = {"q", "k", "v", "o"};

// ---- Devices and streams --------------------------------------------------------------------

// Makes `device` current for the scope and restores the caller's device after it, so a call on
// cuda:1 does not leave the framework's thread on another device.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    FS_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

// The GPU `device` as the runtime describes it; RuntimeError naming the device and the CUDA error
// when there is none (no driver, no GPU, index out of range). Remembered per device, because
// cudaGetDeviceProperties costs more than a launch and a device does not change under a process.
// Callers hold the GIL, which serialises the cache.
GpuTarget describe_gpu(int device) {
  static std::map<int, GpuTarget> described;
  if (const auto found = described.find(device); found != described.end()) return found->second;
  cudaDeviceProp properties{};
  const cudaError_t status = cudaGetDeviceProperties(&properties, device);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear it, so a later call does not report it again
    throw std::runtime_error("no usable CUDA device cuda:" + std::to_string(device) + " (" +
                             cuda_unavailable_reason(status, "cudaGetDeviceProperties") + ")");
  }
  return described[device] = {properties.major * 10 + properties.minor, properties.name};
}

cudaStream_t as_stream(std::intptr_t handle) {
  return reinterpret_cast<cudaStream_t>(handle);
}

// The DLPack `stream` argument for a CUDA stream handle: the spec reserves 0, and spells the
// legacy default stream 1 (cudaStreamLegacy); every other handle is passed as it is.
std::intptr_t dlpack_stream_argument(std::intptr_t handle) {
  return handle == 0 ? 1 : handle;
}

// ---- DLPack consumption ------------------------------------------------------------------------

std::string dtype_text(const dlpack::DataType& dtype) {
  std::string name;
  switch (dtype.code) {
    case dlpack::kDLInt:
      name = "int";
      break;
    case dlpack::kDLUInt:
      name = "uint";
      break;
    case dlpack::kDLFloat:
      name = "float";
      break;
    case dlpack::kDLBfloat:
      name = "bfloat";
      break;
    case dlpack::kDLComplex:
      name = "complex";
      break;
    case dlpack::kDLBool:
      name = "bool";
      break;
    case dlpack::kDLFloat8_e4m3fn:
      // The code's name carries its width: "float8_e4m3fn", not "float8_e4m3fn8".
      if (dtype.bits == 8)
        return dtype.lanes == 1 ? "float8_e4m3fn" : "float8_e4m3fnx" + std::to_string(dtype.lanes);
      name = "float8_e4m3fn of bits ";
      break;
    default:
      name = "type code " + std::to_string(dtype.code) + " of ";
  }
  name += std::to_string(dtype.bits);
  if (dtype.lanes != 1) name += "x" + std::to_string(dtype.lanes);
  return name;
}

std::string shape_text(const std::int64_t* shape, int ndim) {
  std::string text = "(";
  for (int i = 0; i < ndim; ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (ndim == 1 ? ",)" : ")");
}

std::string device_text(std::int32_t type, std::int32_t id) {
  const char* name = dlpack::device_type_name(type);
  return (name ? std::string(name) : "DLPack device type " + std::to_string(type)) + ":" +
         std::to_string(id);
}

// One array borrowed for the length of a call: the producer's capsule stays referenced (so its
// memory does too) and is left unconsumed, so the capsule's own destructor releases it.
struct BorrowedArray {
  py::object capsule;
  TensorView view;
  int device = 0;
  bool read_only = false;
  std::string name;
};

// A descale array (fp32 [batch, heads]) borrowed the same way.
struct BorrowedDescale {
  py::object capsule;
  DescaleView view;
  int device = 0;
  std::string name;
};

// The DLPack code of each dtype the kernels take, and back: one table for borrow() and the
// DeviceArray export.
constexpr std::pair<DType, dlpack::DataType> kDLPackDTypes[] = {
    {DType::FP16, {dlpack::kDLFloat, 16, 1}},
    {DType::BF16, {dlpack::kDLBfloat, 16, 1}},
    {DType::E4M3, {dlpack::kDLFloat8_e4m3fn, 8, 1}},
};

std::optional<DType> dtype_of(const dlpack::DataType& code) {
  for (const auto& [dtype, dl] : kDLPackDTypes)
    if (dl.code == code.code && dl.bits == code.bits && dl.lanes == code.lanes) return dtype;
  return std::nullopt;
}

dlpack::DataType dlpack_dtype(DType dtype) {
  for (const auto& [candidate, dl] : kDLPackDTypes)
    if (candidate == dtype) return dl;
  throw std::logic_error("no DLPack code for dtype " + std::to_string(static_cast<int>(dtype)));
}

// Calls `array.__dlpack__`, asking for a versioned capsule first and falling back to the legacy
// signature for producers that predate DLPack 1.0 (NumPy < 2.1, older frameworks).
py::object export_capsule(const py::handle& array, std::optional<std::intptr_t> stream) {
  const py::object exporter = array.attr("__dlpack__");
  py::object stream_argument = stream ? py::object(py::int_(*stream)) : py::object(py::none());
  try {
    return exporter(
        py::arg("stream") = stream_argument,
        py::arg("max_version") = py::make_tuple(dlpack::kMajorVersion, dlpack::kMinorVersion));
  } catch (const py::error_already_set& error) {
    if (!error.matches(PyExc_TypeError)) throw;
  }
  return exporter(py::arg("stream") = stream_argument);
}

// Exports `array` through DLPack (left unconsumed, `out.capsule` keeps it alive) and returns its
// tensor description after the checks every argument gets: a DLPack producer, on a CUDA device,
// a version this module reads. Sets out.name, out.capsule, out.read_only and out.device.
const dlpack::Tensor& open_dlpack(const py::handle& array, const char* name, std::intptr_t stream,
                                  BorrowedArray& out) {
  out.name = name;
  if (!py::hasattr(array, "__dlpack__") || !py::hasattr(array, "__dlpack_device__"))
    throw py::type_error(std::string(name) +
                         " must be an array implementing the DLPack protocol (__dlpack__ and "
                         "__dlpack_device__: a PyTorch tensor, a CuPy or a JAX array); got " +
                         std::string(py::str(py::type::handle_of(array).attr("__name__"))));
  const auto device = array.attr("__dlpack_device__")().cast<std::pair<int, int>>();
  if (device.first != dlpack::kDLCUDA && device.first != dlpack::kDLCUDAManaged)
    throw py::value_error(std::string(name) + " is on " + device_text(device.first, device.second) +
                          "; the kernels read and write CUDA device memory (move it to the GPU "
                          "first, e.g. tensor.cuda())");
  out.capsule = export_capsule(array, dlpack_stream_argument(stream));

  PyObject* capsule = out.capsule.ptr();
  const dlpack::Tensor* tensor = nullptr;
  if (PyCapsule_IsValid(capsule, dlpack::kVersionedCapsuleName)) {
    auto* managed = static_cast<dlpack::ManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule, dlpack::kVersionedCapsuleName));
    if (managed->version.major != dlpack::kMajorVersion)
      throw py::value_error(std::string(name) + " was exported with DLPack " +
                            std::to_string(managed->version.major) + "." +
                            std::to_string(managed->version.minor) + "; flashscope reads " +
                            std::to_string(dlpack::kMajorVersion) + ".x");
    out.read_only = (managed->flags & dlpack::kFlagReadOnly) != 0;
    tensor = &managed->dl_tensor;
  } else if (PyCapsule_IsValid(capsule, dlpack::kCapsuleName)) {
    tensor =
        &static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule, dlpack::kCapsuleName))
             ->dl_tensor;
  } else {
    throw py::type_error(std::string(name) + ".__dlpack__() returned " +
                         std::string(py::repr(out.capsule)) +
                         ", not an unconsumed DLPack capsule (\"dltensor\" or "
                         "\"dltensor_versioned\")");
  }

  // The capsule's own description is authoritative (a producer may report one device to
  // __dlpack_device__ and hold the data on another only through a bug, but then the data wins).
  if (tensor->device.device_type != dlpack::kDLCUDA &&
      tensor->device.device_type != dlpack::kDLCUDAManaged)
    throw py::value_error(std::string(name) + " is on " +
                          device_text(tensor->device.device_type, tensor->device.device_id) +
                          "; the kernels read and write CUDA device memory");
  out.device = tensor->device.device_id;
  return *tensor;
}

BorrowedArray borrow(const py::handle& array, const char* name, std::intptr_t stream) {
  BorrowedArray out;
  const dlpack::Tensor* tensor = &open_dlpack(array, name, stream, out);
  const std::optional<DType> dtype = dtype_of(tensor->dtype);
  if (!dtype)
    throw py::type_error(std::string(name) + " has dtype " + dtype_text(tensor->dtype) +
                         "; the kernels take float16, bfloat16 or float8_e4m3fn");
  out.view.dtype = *dtype;

  if (tensor->ndim != 4)
    throw py::value_error(std::string(name) + " has " + std::to_string(tensor->ndim) +
                          " dimensions, shape " + shape_text(tensor->shape, tensor->ndim) +
                          "; the kernels take 4: [batch, seq_len, heads, d_head]");
  for (int axis = 0; axis < 4; ++axis)
    out.view.shape[static_cast<std::size_t>(axis)] = tensor->shape[axis];
  const std::array<std::int64_t, 4> compact = contiguous_strides(out.view.shape);
  for (int axis = 0; axis < 4; ++axis) {
    const auto index = static_cast<std::size_t>(axis);
    // A null stride array means compact row-major. An extent-1 axis is never stepped along, so
    // its stride does not change the layout (frameworks report arbitrary ones there).
    out.view.strides[index] = tensor->strides == nullptr || tensor->shape[axis] == 1
                                  ? compact[index]
                                  : tensor->strides[axis];
  }
  out.view.data = static_cast<const char*>(tensor->data) + tensor->byte_offset;
  out.view.location = MemoryLocation::device;
  return out;
}

// A descale array: fp32, two dimensions [batch, heads] (docs/spec/fp8-track.md §1). Its shape,
// layout and whether the inputs want it at all are descale_violation's (launch validation).
BorrowedDescale borrow_descale(const py::handle& array, const char* name, std::intptr_t stream) {
  BorrowedDescale out;
  BorrowedArray holder;  // open_dlpack's checks and capsule; the view below is the descale's
  const dlpack::Tensor* tensor = &open_dlpack(array, name, stream, holder);
  out.name = holder.name;
  out.capsule = holder.capsule;
  out.device = holder.device;
  const dlpack::DataType& dtype = tensor->dtype;
  if (dtype.code != dlpack::kDLFloat || dtype.bits != 32 || dtype.lanes != 1)
    throw py::type_error(std::string(name) + " has dtype " + dtype_text(dtype) +
                         "; descales are float32");
  if (tensor->ndim != 2)
    throw py::value_error(std::string(name) + " has " + std::to_string(tensor->ndim) +
                          " dimensions, shape " + shape_text(tensor->shape, tensor->ndim) +
                          "; descales take 2: [batch, heads]");
  for (std::size_t axis = 0; axis < 2; ++axis) {
    out.view.shape[axis] = tensor->shape[axis];
    out.view.strides[axis] = tensor->strides != nullptr
                                 ? tensor->strides[axis]
                                 : (axis == 0 ? tensor->shape[1] : std::int64_t{1});
  }
  out.view.data =
      reinterpret_cast<const float*>(static_cast<const char*>(tensor->data) + tensor->byte_offset);
  out.view.location = MemoryLocation::device;
  return out;
}

// The three optional descale arguments (None: not given).
struct Descales {
  std::optional<BorrowedDescale> q, k, v;
};

Descales borrow_descales(const py::object& q, const py::object& k, const py::object& v,
                         std::intptr_t stream) {
  Descales out;
  if (!q.is_none()) out.q = borrow_descale(q, "q_descale", stream);
  if (!k.is_none()) out.k = borrow_descale(k, "k_descale", stream);
  if (!v.is_none()) out.v = borrow_descale(v, "v_descale", stream);
  return out;
}

// The forward's row log-sum-exp (backward-track.md §1): fp32 [batch, heads, seq_len],
// contiguous, on a CUDA device. `expected` is {batch, heads, seq_len} of the q it belongs to.
struct BorrowedLse {
  BorrowedArray array;  // view.data is the pointer; view's dtype and 4-d shape are unused
  float* data = nullptr;
};

BorrowedLse borrow_lse(const py::handle& array, const std::array<std::int64_t, 3>& expected,
                       std::intptr_t stream) {
  BorrowedLse out;
  const dlpack::Tensor& tensor = open_dlpack(array, "lse", stream, out.array);
  const dlpack::DataType& dtype = tensor.dtype;
  if (dtype.code != dlpack::kDLFloat || dtype.bits != 32 || dtype.lanes != 1)
    throw py::type_error("lse has dtype " + dtype_text(dtype) +
                         "; the log-sum-exp is float32 [batch, heads, seq_len]");
  const std::string wanted = "(" + std::to_string(expected[0]) + ", " +
                             std::to_string(expected[1]) + ", " + std::to_string(expected[2]) + ")";
  if (tensor.ndim != 3 || tensor.shape[0] != expected[0] || tensor.shape[1] != expected[1] ||
      tensor.shape[2] != expected[2])
    throw py::value_error("lse has shape " + shape_text(tensor.shape, tensor.ndim) +
                          "; the log-sum-exp of q is float32 [batch, heads, seq_len] = " + wanted);
  // Row-major: strides (heads * seq_len, seq_len, 1), an extent-1 axis's stride free.
  const std::int64_t compact[3] = {expected[1] * expected[2], expected[2], 1};
  if (tensor.strides != nullptr)
    for (int axis = 0; axis < 3; ++axis)
      if (tensor.shape[axis] != 1 && tensor.strides[axis] != compact[axis])
        throw py::value_error("lse must be contiguous float32 " + wanted + "; its strides are " +
                              shape_text(tensor.strides, 3));
  out.data = reinterpret_cast<float*>(static_cast<char*>(tensor.data) + tensor.byte_offset);
  out.array.view.data = out.data;
  if (reinterpret_cast<std::uintptr_t>(out.data) % 16 != 0)
    throw py::value_error("lse's data is not 16-byte aligned");
  return out;
}

// ---- Kernel choice ---------------------------------------------------------------------------

// ValueError unless the named step (or, with none named, some built step) runs every axis' value
// of the problem the arrays pose — the mask, grouped K/V heads, the head dimension — as its
// descriptor declares: the message launch validation, `explorer check` and a sweep give, naming
// the steps that run it.
void require_problem_support(std::optional<int> step, const Problem& problem) {
  if (step) {
    if (auto reason = configs::step_refusal_message(*step, problem)) throw py::value_error(*reason);
    return;
  }
  std::vector<int> built;
  for (const int candidate : built_kernels().steps())
    if (configs::step_descriptor(candidate).pass == problem.pass) built.push_back(candidate);
  for (const int candidate : built)
    if (!configs::step_refusal_message(candidate, problem)) return;
  const std::optional<std::string> newest =
      built.empty() ? std::nullopt : configs::step_refusal_message(built.back(), problem);
  throw py::value_error("no step built into this module runs the problem " +
                        problem_label(problem) + (newest ? ": " + *newest : std::string()) +
                        " (built: " + configs::step_list_text(built) + ")");
}

void require_step_built(int step) {
  try {
    configs::step_info(step);
  } catch (const std::out_of_range& error) {
    throw py::value_error(error.what());
  }
  if (built_kernels().entries_of_step(step).empty())
    throw py::value_error("step " + step_name(step) + " is not built into this module (built: " +
                          configs::step_list_text(built_kernels().steps()) +
                          "; see FLASHSCOPE_KERNEL_SET / FLASHSCOPE_STEPS)");
}

AttentionTensors attention_tensors(const std::vector<BorrowedArray>& arrays, bool causal,
                                   const Descales& descales) {
  // K and V have their own head count (grouped-query attention); O has Q's shape.
  // Until the output exists, Q stands in for it (with the dtype the inputs write): every rule
  // about O compares it with Q.
  TensorView o = arrays.size() > 3 ? arrays[3].view : arrays[0].view;
  if (arrays.size() <= 3) o.dtype = output_dtype(o.dtype);
  AttentionTensors tensors{arrays[0].view, arrays[1].view, arrays[2].view, o, causal};
  const auto view = [](const std::optional<BorrowedDescale>& descale) {
    return descale ? std::optional<DescaleView>(descale->view) : std::nullopt;
  };
  tensors.q_descale = view(descales.q);
  tensors.k_descale = view(descales.k);
  tensors.v_descale = view(descales.v);
  return tensors;
}

// The kernel of `step` for the call: the named config, or the step's pick for the GPU, replaced
// by the config the step chooses for this problem where it chooses one and it is built
// (StepDescriptor::problem_config: step 32 launches B_r = 128 under the mask at short N), as the
// explorer's sweep and check do.
const KernelEntry& kernel_of_step(int step, const std::optional<KernelConfig>& config,
                                  const TensorView& q, const Problem& problem,
                                  const GpuTarget& gpu) {
  if (config) return find_kernel(built_kernels(), step, *config);
  const KernelEntry& pick =
      default_kernel(built_kernels(), step, q.dtype, static_cast<int>(q.shape[3]), gpu);
  const KernelConfig chosen = configs::config_for_problem(step, pick.config, problem);
  if (chosen == pick.config) return pick;
  const KernelEntry* entry = built_kernels().try_find(step, chosen);
  return entry != nullptr ? *entry : pick;
}

struct ResolvedKernel {
  const KernelEntry* entry = nullptr;
  int device = 0;
  GpuTarget gpu;
};

// Checks the borrowed arrays and picks the kernel. Every rule that needs no GPU is checked before
// the device is queried, so a bad call is named as such on any machine.
ResolvedKernel resolve(const std::vector<BorrowedArray>& arrays, const Descales& descales,
                       std::optional<int> step, const std::optional<KernelConfig>& config,
                       bool causal) {
  for (std::size_t i = 1; i < arrays.size(); ++i)
    if (arrays[i].device != arrays[0].device)
      throw py::value_error(arrays[i].name + " is on cuda:" + std::to_string(arrays[i].device) +
                            " but q is on cuda:" + std::to_string(arrays[0].device) +
                            "; q, k, v and o must be on one GPU");
  for (const auto* descale : {&descales.q, &descales.k, &descales.v})
    if (*descale && (*descale)->device != arrays[0].device)
      throw py::value_error((*descale)->name + " is on cuda:" + std::to_string((*descale)->device) +
                            " but q is on cuda:" + std::to_string(arrays[0].device) +
                            "; the descales must be on q's GPU");
  if (arrays.size() > 3 && arrays[3].read_only)
    throw py::value_error(
        "o is read-only (its DLPack export says so); the kernel writes the output there");
  for (const BorrowedArray& array : arrays)
    if (reinterpret_cast<std::uintptr_t>(array.view.data) % 16 != 0)
      throw py::value_error(array.name + "'s data starts at " +
                            std::to_string(reinterpret_cast<std::uintptr_t>(array.view.data)) +
                            ", which is not 16-byte aligned; the kernels copy 16-byte vectors");
  if (arrays.size() > 3) {
    // The kernels read every K and V row from every block, and forward_timed launches again on
    // the same inputs, so an output that overlaps an input would silently change the result.
    const auto end_of = [](const TensorView& view) {
      return static_cast<const char*>(view.data) + view.shape[0] * view.shape[1] * view.shape[2] *
                                                       view.shape[3] * element_bytes(view.dtype);
    };
    const TensorView& o = arrays[3].view;
    for (int i = 0; i < 3; ++i) {
      const TensorView& input = arrays[static_cast<std::size_t>(i)].view;
      if (static_cast<const char*>(o.data) < end_of(input) &&
          static_cast<const char*>(input.data) < end_of(o))
        throw py::value_error(std::string("o overlaps ") + kTensorArgumentNames[i] +
                              " in memory; the output must not share memory with an input");
    }
  }
  if (step) require_step_built(*step);
  const AttentionTensors tensors = attention_tensors(arrays, causal, descales);
  const Problem problem = problem_of(tensors);
  if (const auto violation = problem_violation(problem))
    throw py::value_error("q, k, v: " + *violation);
  // Before the steps are asked: a missing or misshapen descale is the caller's to fix whichever
  // step runs the problem.
  if (const auto violation = descale_violation(tensors)) throw py::value_error(*violation);
  require_problem_support(step, problem);
  if (step && config) {
    // The rules of launch validation that do not depend on the device, for the lowest GPU the
    // kernel was compiled for; the device itself is checked below.
    const KernelEntry& entry = find_kernel(built_kernels(), *step, *config);
    constexpr int kLowestSupportedComputeCapability = 80;
    validate_launch(entry, tensors,
                    entry.exact_compute_capability != 0 ? entry.exact_compute_capability
                                                        : kLowestSupportedComputeCapability);
  }

  ResolvedKernel resolved;
  resolved.device = arrays[0].device;
  resolved.gpu = describe_gpu(resolved.device);
  const int capability = resolved.gpu.compute_capability;
  if (step) {
    resolved.entry = &kernel_of_step(*step, config, tensors.q, problem, resolved.gpu);
    validate_launch(*resolved.entry, tensors, capability, resolved.device);
    return resolved;
  }

  // No step named: the newest built step whose kernel runs on this GPU and takes these inputs.
  std::vector<int> steps = built_kernels().steps();
  std::string newest_refusal;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    // A backward step (B1, ...) is never the forward's choice, nor its "newest" in a message.
    if (configs::step_descriptor(*it).pass != Pass::forward) continue;
    const std::vector<const KernelEntry*> entries = built_kernels().entries_of_step(*it);
    if (std::none_of(entries.begin(), entries.end(),
                     [&](const KernelEntry* entry) { return runs_on(*entry, capability); }))
      continue;
    try {
      const KernelEntry& entry = kernel_of_step(*it, config, tensors.q, problem, resolved.gpu);
      if (configs::step_refusal_message(*it, problem)) continue;
      validate_launch(entry, tensors, capability, resolved.device);
      resolved.entry = &entry;
      return resolved;
    } catch (const std::invalid_argument& refusal) {  // LaunchValidationError, KernelLookupError
      if (newest_refusal.empty())
        newest_refusal = "step " + step_name(*it) + " (the newest for this GPU): " + refusal.what();
    }
  }
  if (newest_refusal.empty())
    throw py::value_error(
        "no step built into this module runs on cuda:" + std::to_string(resolved.device) + " (" +
        resolved.gpu.name + ", sm_" + std::to_string(capability) +
        "); built: " + configs::step_list_text(steps));
  throw py::value_error("no step built into this module takes these inputs on cuda:" +
                        std::to_string(resolved.device) + " (" + resolved.gpu.name + "); " +
                        newest_refusal +
                        (config ? "" : " (name a step and config to see that kernel's rule)"));
}

// Rejects a stream of another device: the launch would fail or run on the wrong GPU.
void check_stream_device(std::intptr_t stream, int device) {
  // cudaStreamGetDevice is not permitted on a stream being captured into a CUDA graph (it ends
  // the capture with cudaErrorStreamCaptureUnsupported); cudaStreamIsCapturing is. A captured
  // launch on another device's stream is refused by the capture itself.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(as_stream(stream), &capture) == cudaSuccess &&
      capture != cudaStreamCaptureStatusNone)
    return;
  cudaGetLastError();  // a failed query is reported by cudaStreamGetDevice below
  int stream_device = -1;
  const cudaError_t status = cudaStreamGetDevice(as_stream(stream), &stream_device);
  if (status != cudaSuccess) {
    cudaGetLastError();  // not sticky; clear it so the next call does not report it
    throw py::value_error("stream " + std::to_string(stream) +
                          " is not a usable CUDA stream handle (" + cudaGetErrorName(status) + ")");
  }
  if (stream_device != device)
    throw py::value_error("stream " + std::to_string(stream) +
                          " belongs to cuda:" + std::to_string(stream_device) +
                          " but the arrays are on cuda:" + std::to_string(device));
}

// ---- The module's own output buffer ------------------------------------------------------------

// Device memory the module allocates when the caller's framework has no allocator it can reach
// (JAX, whose arrays are immutable, and frameworks it does not know). Shared by the Python object
// and every capsule exported from it, so it lives while any consumer holds it.
struct DeviceAllocation {
  void* data = nullptr;
  int device = 0;
  cudaEvent_t ready = nullptr;  // recorded on the stream of the last write

  DeviceAllocation(std::size_t bytes, int device_index) : device(device_index) {
    const DeviceScope scope(device);
    FS_CUDA_CHECK(cudaMalloc(&data, bytes));
    FS_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  }
  ~DeviceAllocation() {
    // May run on a framework's thread without the GIL; touches no Python object.
    int previous = -1;
    cudaGetDevice(&previous);
    cudaSetDevice(device);
    if (ready) cudaEventDestroy(ready);
    cudaFree(data);  // waits for work still using it
    if (previous >= 0) cudaSetDevice(previous);
  }
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
};

// What an exported capsule owns: the allocation and the shape its DLTensor points at.
struct ExportContext {
  std::shared_ptr<DeviceAllocation> allocation;
  std::array<std::int64_t, 4> shape{};
};

class DeviceArray {
 public:
  DeviceArray(const std::array<std::int64_t, 4>& shape, DType dtype, int device)
      : shape_(shape), dtype_(dtype) {
    std::int64_t count = 1;
    for (const std::int64_t extent : shape) {
      if (extent <= 0) throw py::value_error("DeviceArray: every extent must be positive");
      count *= extent;
    }
    allocation_ = std::make_shared<DeviceAllocation>(
        static_cast<std::size_t>(count) * element_bytes(dtype), device);
  }

  void* data() const { return allocation_->data; }
  int device() const { return allocation_->device; }
  DType dtype() const { return dtype_; }
  const std::array<std::int64_t, 4>& shape() const { return shape_; }

  // Marks the end of the last write on `stream`; exports make their consumer's stream wait for it.
  void record_ready(std::intptr_t stream) {
    const DeviceScope scope(allocation_->device);
    FS_CUDA_CHECK(cudaEventRecord(allocation_->ready, as_stream(stream)));
  }

  py::tuple dlpack_device() const { return py::make_tuple(int(dlpack::kDLCUDA), device()); }

  py::object dlpack(const py::object& stream, const py::object& max_version,
                    const py::object& dl_device, const py::object& copy) {
    if (!dl_device.is_none()) {
      const auto wanted = dl_device.cast<std::pair<int, int>>();
      if (wanted.first != dlpack::kDLCUDA || wanted.second != device())
        throw py::buffer_error("DeviceArray lives on cuda:" + std::to_string(device()) +
                               " and cannot be exported to " +
                               device_text(wanted.first, wanted.second));
    }
    if (!copy.is_none() && copy.cast<bool>())
      throw py::buffer_error("DeviceArray exports without a copy only (copy=True was asked)");
    // The consumer's stream waits for the last write; -1 means the consumer synchronizes itself.
    if (!stream.is_none()) {
      const auto consumer = stream.cast<std::intptr_t>();
      if (consumer != -1) {
        const DeviceScope scope(device());
        FS_CUDA_CHECK(cudaStreamWaitEvent(as_stream(consumer), allocation_->ready, 0));
      }
    }
    const bool versioned =
        !max_version.is_none() && max_version.cast<std::pair<int, int>>().first >= 1;

    auto context = std::make_unique<ExportContext>();
    context->allocation = allocation_;
    context->shape = shape_;
    dlpack::Tensor tensor{};
    tensor.data = allocation_->data;
    tensor.device = {dlpack::kDLCUDA, device()};
    tensor.ndim = 4;
    tensor.dtype = dlpack_dtype(dtype_);
    tensor.shape = context->shape.data();
    tensor.strides = nullptr;  // compact row-major
    tensor.byte_offset = 0;

    if (versioned) {
      auto* managed = new dlpack::ManagedTensorVersioned{};
      managed->version = {dlpack::kMajorVersion, dlpack::kMinorVersion};
      managed->manager_ctx = context.release();
      managed->deleter = [](dlpack::ManagedTensorVersioned* self) {
        delete static_cast<ExportContext*>(self->manager_ctx);
        delete self;
      };
      managed->flags = 0;
      managed->dl_tensor = tensor;
      return py::reinterpret_steal<py::object>(
          PyCapsule_New(managed, dlpack::kVersionedCapsuleName, [](PyObject* capsule) {
            // Unconsumed (the name was not changed to "used_..."): the capsule still owns it.
            if (PyCapsule_IsValid(capsule, dlpack::kVersionedCapsuleName)) {
              auto* owned = static_cast<dlpack::ManagedTensorVersioned*>(
                  PyCapsule_GetPointer(capsule, dlpack::kVersionedCapsuleName));
              owned->deleter(owned);
            }
          }));
    }
    auto* managed = new dlpack::ManagedTensor{};
    managed->dl_tensor = tensor;
    managed->manager_ctx = context.release();
    managed->deleter = [](dlpack::ManagedTensor* self) {
      delete static_cast<ExportContext*>(self->manager_ctx);
      delete self;
    };
    return py::reinterpret_steal<py::object>(
        PyCapsule_New(managed, dlpack::kCapsuleName, [](PyObject* capsule) {
          if (PyCapsule_IsValid(capsule, dlpack::kCapsuleName)) {
            auto* owned = static_cast<dlpack::ManagedTensor*>(
                PyCapsule_GetPointer(capsule, dlpack::kCapsuleName));
            owned->deleter(owned);
          }
        }));
  }

 private:
  std::array<std::int64_t, 4> shape_;
  DType dtype_;
  std::shared_ptr<DeviceAllocation> allocation_;
};

// A CUDA device index given by the caller, before any CUDA call sees it.
int device_argument(int device) {
  if (device < 0)
    throw py::value_error("device " + std::to_string(device) +
                          " is not a CUDA device index (0 or more)");
  return device;
}

DType dtype_argument(const std::string& text) {
  if (const std::optional<DType> dtype = dtype_from_string(text)) return *dtype;
  throw py::value_error("dtype \"" + text + "\" is not " + dtype_choices_text());
}

// ---- The forward pass --------------------------------------------------------------------------

// Milliseconds with 4 significant decimals, for Timing's repr.
std::string exact_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", ms);
  return text;
}

// How forward_timed measures: the sweep's interleaved engine and its settings
// (profiling/measurement/interleaved.hpp), with the kernel as the one contender.
struct TimingRequest {
  double ci_target_percent = 1.0;
  int min_rounds = 10;
  int max_rounds = 400;
  double cell_seconds = 2.0;
  std::string launch_pattern = "graph";
};

// What forward_timed measured: the median per-launch time of the rounds with its 95 %
// order-statistic interval, as a sweep row reports it (median_ms, ci_low_ms, ci_high_ms).
struct Timing {
  double ms = 0;
  std::optional<double> ci_low_ms, ci_high_ms;  // none with fewer than 6 rounds
  int rounds = 0;
  int launches_per_round = 0;
  std::string launch_pattern;  // the one used (graph falls back to stream when capture fails)
  std::string pattern_note;    // why it differs from the one asked for
  std::string stop_reason;     // "target", "max rounds", "time cap"
  double seconds = 0;          // wall time of the timed rounds
  // The GPU meanwhile, as a sweep row records it (NVML samples over the timed rounds); empty
  // where NVML is unavailable, and `conditions` then says why.
  std::optional<unsigned> sm_clock_mhz, sm_clock_min_mhz, sm_clock_max_mhz;
  std::optional<double> power_mean_w, power_limit_w;
  std::vector<std::string> clocks_held_by;  // NVML's throttle reasons, e.g. "power cap"
  std::string conditions;                   // the sampler's one-line summary
};

struct ForwardResult {
  py::object o;
  int step = 0;
  KernelConfig config{};
  std::optional<Timing> timing;
};

// The engine's settings for a request; throws std::invalid_argument (ValueError) naming the
// argument and the rule, before any GPU is touched.
measurement::InterleavedSettings interleaved_settings(const TimingRequest& request) {
  measurement::InterleavedSettings settings;
  if (!(request.ci_target_percent > 0))
    throw std::invalid_argument("ci_target=" + std::to_string(request.ci_target_percent) +
                                ": the target interval width must be a positive percentage of "
                                "the median (e.g. 1.0)");
  settings.stopping.target_relative_width = request.ci_target_percent / 100;
  settings.stopping.min_rounds = request.min_rounds;
  settings.stopping.max_rounds = request.max_rounds;
  settings.stopping.max_seconds = request.cell_seconds;
  const auto pattern = measurement::launch_pattern_from_string(request.launch_pattern);
  if (!pattern)
    throw std::invalid_argument("launch_pattern=\"" + request.launch_pattern +
                                "\" is not a launch pattern: graph, stream or gapped");
  settings.pattern = *pattern;
  try {
    measurement::validate_interleaved_settings(settings);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(std::string("forward_timed: ") + error.what());
  }
  return settings;
}

// A CUDA event without timing, to order one stream after another.
class StreamFence {
 public:
  StreamFence() { FS_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~StreamFence() { cudaEventDestroy(event_); }
  StreamFence(const StreamFence&) = delete;
  StreamFence& operator=(const StreamFence&) = delete;
  // `waiting` runs nothing more until what `first` holds now is done.
  void order(cudaStream_t first, cudaStream_t waiting) {
    FS_CUDA_CHECK(cudaEventRecord(event_, first));
    FS_CUDA_CHECK(cudaStreamWaitEvent(waiting, event_, 0));
  }

 private:
  cudaEvent_t event_ = nullptr;
};

// Times `launch` as a sweep times a kernel row. The rounds run on a stream of their own (graph
// capture needs a created stream; the caller's may be the legacy default one), ordered after the
// caller's work and before whatever the caller enqueues next.
Timing time_interleaved(const std::function<void(cudaStream_t)>& launch, const std::string& name,
                        const measurement::InterleavedSettings& settings, cudaStream_t caller) {
  const CudaStream rounds;
  StreamFence fence;
  fence.order(caller, rounds.get());
  // Sampled over the timed rounds only, as the sweep's worker samples a cell: a time is read
  // with the clock it ran at (a card at its power limit moves it by hundreds of MHz).
  int device = 0;
  FS_CUDA_CHECK(cudaGetDevice(&device));
  measurement::NvmlSampler nvml(measurement::nvml_device_key(device));
  measurement::NvmlSummary conditions;
  measurement::RoundHooks hooks;
  if (nvml.available()) {
    hooks.before_timed_rounds = [&] { nvml.start(); };
    hooks.after_timed_rounds = [&] { conditions = nvml.stop(); };
  }
  const measurement::InterleavedResult result =
      measurement::measure_interleaved({{name, launch}}, {}, settings, rounds.get(), hooks);
  fence.order(rounds.get(), caller);
  const measurement::ContenderResult& kernel = result.contenders.front();
  Timing timing;
  timing.ms = kernel.time.median;
  if (kernel.time.interval) {
    timing.ci_low_ms = kernel.time.interval->lower;
    timing.ci_high_ms = kernel.time.interval->upper;
  }
  timing.rounds = result.rounds;
  timing.launches_per_round = kernel.launches_per_round;
  timing.launch_pattern = std::string(measurement::launch_pattern_name(result.pattern.pattern));
  timing.pattern_note = result.pattern.note;
  timing.stop_reason = std::string(measurement::stop_reason_name(result.stop_reason));
  timing.seconds = result.seconds;
  timing.sm_clock_mhz = conditions.sm_clock_median_mhz;
  timing.sm_clock_min_mhz = conditions.sm_clock_min_mhz;
  timing.sm_clock_max_mhz = conditions.sm_clock_max_mhz;
  timing.power_mean_w = conditions.power_mean_w;
  timing.power_limit_w = conditions.power_limit_w;
  if (conditions.reasons_known) timing.clocks_held_by = conditions.reason_names();
  timing.conditions = nvml.available() ? conditions.text() : nvml.unavailable_reason();
  return timing;
}

// Borrows q, k, v (and o), picks and validates the kernel, allocates the output through
// `allocate_output(shape, dtype, device)` when o is None, then launches on `stream`, or, with
// `timing`, times it as a sweep times a kernel row (time_interleaved).
ForwardResult forward(const py::object& q, const py::object& k, const py::object& v, py::object o,
                      const py::object& allocate_output, std::optional<int> step,
                      const std::optional<KernelConfig>& config, bool causal, std::intptr_t stream,
                      const std::optional<TimingRequest>& timing, const py::object& lse,
                      const py::object& q_descale, const py::object& k_descale,
                      const py::object& v_descale) {
  const std::optional<measurement::InterleavedSettings> settings =
      timing ? std::optional(interleaved_settings(*timing)) : std::nullopt;
  std::vector<BorrowedArray> arrays;
  const py::handle inputs[] = {q, k, v};
  for (int i = 0; i < 3; ++i)
    arrays.push_back(borrow(inputs[i], kTensorArgumentNames[i], stream));
  if (!o.is_none()) arrays.push_back(borrow(o, "o", stream));
  const Descales descales = borrow_descales(q_descale, k_descale, v_descale, stream);

  const ResolvedKernel resolved = resolve(arrays, descales, step, config, causal);
  const KernelEntry& entry = *resolved.entry;
  const DeviceScope scope(resolved.device);
  check_stream_device(stream, resolved.device);

  if (o.is_none()) {
    const TensorView& view = arrays[0].view;
    o = allocate_output(py::make_tuple(view.shape[0], view.shape[1], view.shape[2], view.shape[3]),
                        std::string(dtype_lower_name(output_dtype(view.dtype))), resolved.device);
    arrays.push_back(borrow(o, "o", stream));
    if (arrays[3].device != resolved.device || arrays[3].read_only)
      throw std::logic_error("the output allocated for this call is on cuda:" +
                             std::to_string(arrays[3].device) + " or read-only");
  }
  // The mask travels in the tensors: make_forward_args sets ForwardArgs::causal from it.
  AttentionTensors tensors = attention_tensors(arrays, causal, descales);
  // The row log-sum-exp the backward needs (ForwardArgs::softmax_lse), where asked for: launch
  // validation refuses a step that does not write it, naming those that do.
  std::optional<BorrowedLse> lse_array;
  if (!lse.is_none()) {
    const TensorView& view = arrays[0].view;
    lse_array = borrow_lse(lse, {view.shape[0], view.shape[2], view.shape[1]}, stream);
    if (lse_array->array.device != resolved.device)
      throw py::value_error("lse is on cuda:" + std::to_string(lse_array->array.device) +
                            " but q is on cuda:" + std::to_string(resolved.device));
    if (lse_array->array.read_only)
      throw py::value_error("lse is read-only (its DLPack export says so); the kernel writes it");
    tensors.softmax_lse = lse_array->data;
  }
  validate_launch(entry, tensors, resolved.gpu.compute_capability, resolved.device);
  const ForwardArgs args = make_forward_args(entry, tensors);

  ForwardResult result;
  result.step = entry.step;
  result.config = entry.config;
  if (!timing) {
    FS_CUDA_CHECK(entry.launch(args, as_stream(stream)));
  } else {
    const std::string name =
        "step " + std::to_string(entry.step) + " " + to_short_form(entry.config);
    const py::gil_scoped_release release;
    result.timing = time_interleaved(
        [&](cudaStream_t launch_stream) { FS_CUDA_CHECK(entry.launch(args, launch_stream)); }, name,
        *settings, as_stream(stream));
  }
  if (py::isinstance<DeviceArray>(o)) o.cast<DeviceArray&>().record_ready(stream);
  result.o = o;
  return result;
}

// ---- The backward pass -------------------------------------------------------------------------

struct BackwardResult {
  py::object dq, dk, dv;
  int step = 0;
  KernelConfig config{};
};

constexpr const char* kBackwardArgumentNames[] = {"q", "k", "v", "o", "do", "dq", "dk", "dv"};

// dQ, dK, dV of attention from q, k, v, the forward's o and lse and the loss gradient do
// (docs/spec/backward-track.md §1), with a backward step (B1, B2, ...): the named one, or the
// newest built one that runs on the GPU and takes the problem. dq, dk, dv None are allocated like
// q, k, v through `allocate_output`. Every rule that needs no GPU is checked first. With `launch`
// false (resolve_backward_kernel()) it returns the chosen kernel after every check, gradients None.
BackwardResult backward(const py::object& q, const py::object& k, const py::object& v,
                        const py::object& o, const py::object& d_o, const py::object& lse,
                        py::object dq, py::object dk, py::object dv,
                        const py::object& allocate_output, std::optional<int> step,
                        const std::optional<KernelConfig>& config, bool causal,
                        std::intptr_t stream, bool launch) {
  std::vector<BorrowedArray> arrays;
  const py::handle inputs[] = {q, k, v, o, d_o};
  for (int i = 0; i < 5; ++i)
    arrays.push_back(borrow(inputs[i], kBackwardArgumentNames[i], stream));
  py::object* outputs[] = {&dq, &dk, &dv};
  for (int i = 0; i < 3; ++i)
    if (!outputs[i]->is_none())
      arrays.push_back(borrow(*outputs[i], kBackwardArgumentNames[5 + i], stream));
  for (const BorrowedArray& array : arrays) {
    if (array.device != arrays[0].device)
      throw py::value_error(array.name + " is on cuda:" + std::to_string(array.device) +
                            " but q is on cuda:" + std::to_string(arrays[0].device) +
                            "; every array must be on one GPU");
    if (reinterpret_cast<std::uintptr_t>(array.view.data) % 16 != 0)
      throw py::value_error(array.name +
                            "'s data is not 16-byte aligned; the kernels copy "
                            "16-byte vectors");
  }
  const TensorView& qv = arrays[0].view;
  const BorrowedLse lse_array = borrow_lse(lse, {qv.shape[0], qv.shape[2], qv.shape[1]}, stream);
  if (lse_array.array.device != arrays[0].device)
    throw py::value_error("lse is on cuda:" + std::to_string(lse_array.array.device) +
                          " but q is on cuda:" + std::to_string(arrays[0].device));
  // Given gradients: writable, and apart from every input (the backward reads all of them
  // throughout, so an overlap would silently change the result).
  const auto bytes_of = [](const TensorView& view) {
    return view.shape[0] * view.shape[1] * view.shape[2] * view.shape[3] *
           element_bytes(view.dtype);
  };
  const auto overlap = [](const void* a, std::int64_t a_bytes, const void* b,
                          std::int64_t b_bytes) {
    const char* x = static_cast<const char*>(a);
    const char* y = static_cast<const char*>(b);
    return x < y + b_bytes && y < x + a_bytes;
  };
  for (std::size_t i = 5; i < arrays.size(); ++i) {
    if (arrays[i].read_only)
      throw py::value_error(arrays[i].name +
                            " is read-only (its DLPack export says so); the kernel writes it");
    for (std::size_t j = 0; j < 5; ++j)
      if (overlap(arrays[i].view.data, bytes_of(arrays[i].view), arrays[j].view.data,
                  bytes_of(arrays[j].view)))
        throw py::value_error(arrays[i].name + " overlaps " + arrays[j].name +
                              " in memory; a gradient must not share memory with an input");
    const std::int64_t lse_bytes =
        static_cast<std::int64_t>(sizeof(float)) * qv.shape[0] * qv.shape[1] * qv.shape[2];
    if (overlap(arrays[i].view.data, bytes_of(arrays[i].view), lse_array.data, lse_bytes))
      throw py::value_error(arrays[i].name + " overlaps lse in memory");
  }

  // The problem, with the gradients not yet allocated standing in as their inputs.
  const auto view_of = [&](std::size_t output, std::size_t input) -> const TensorView& {
    const std::size_t given =
        5 + static_cast<std::size_t>(std::count_if(
                outputs, outputs + output, [](const py::object* o) { return !o->is_none(); }));
    return outputs[output]->is_none() ? arrays[input].view : arrays[given].view;
  };
  BackwardTensors tensors{arrays[0].view, arrays[1].view, arrays[2].view, arrays[3].view,
                          arrays[4].view, view_of(0, 0),  view_of(1, 1),  view_of(2, 2)};
  tensors.softmax_lse = lse_array.data;
  tensors.causal = causal;
  check_backward_tensors(tensors);  // shapes, dtypes, layout: no GPU needed
  const Problem problem = problem_of(tensors);
  if (const auto violation = problem_violation(problem))
    throw py::value_error("q, k, v: " + *violation);
  if (step) {
    require_step_built(*step);
    if (auto reason = configs::step_refusal_message(*step, problem)) throw py::value_error(*reason);
  } else {
    require_problem_support(std::nullopt, problem);
  }

  const int device = arrays[0].device;
  const GpuTarget gpu = describe_gpu(device);
  const DeviceScope scope(device);
  check_stream_device(stream, device);
  const KernelEntry* chosen = nullptr;
  if (step) {
    chosen = &kernel_of_step(*step, config, qv, problem, gpu);
  } else {
    // The newest built backward step whose kernel runs here and takes the problem.
    std::vector<int> steps = built_kernels().steps();
    for (auto it = steps.rbegin(); it != steps.rend() && chosen == nullptr; ++it) {
      if (configs::step_descriptor(*it).pass != Pass::backward) continue;
      if (configs::step_refusal_message(*it, problem)) continue;
      const KernelEntry& entry = kernel_of_step(*it, config, qv, problem, gpu);
      if (runs_on(entry, gpu.compute_capability)) chosen = &entry;
    }
    if (chosen == nullptr)
      throw py::value_error(
          "no backward step built into this module runs on cuda:" + std::to_string(device) + " (" +
          gpu.name + ", sm_" + std::to_string(gpu.compute_capability) + ")");
  }
  const KernelEntry& entry = *chosen;
  // Refused before anything is allocated: the step, the device, the tensors against each other.
  validate_backward_launch(entry, tensors, gpu.compute_capability, device);
  // resolve_backward_kernel(): every check above has passed; nothing is allocated or launched.
  if (!launch) return {py::none(), py::none(), py::none(), entry.step, entry.config};

  for (int i = 0; i < 3; ++i) {
    if (!outputs[i]->is_none()) continue;
    const TensorView& like = arrays[static_cast<std::size_t>(i)].view;
    *outputs[i] =
        allocate_output(py::make_tuple(like.shape[0], like.shape[1], like.shape[2], like.shape[3]),
                        std::string(dtype_lower_name(like.dtype)), device);
  }
  std::vector<BorrowedArray> gradients;
  for (int i = 0; i < 3; ++i)
    gradients.push_back(borrow(*outputs[i], kBackwardArgumentNames[5 + i], stream));
  tensors.dq = gradients[0].view;
  tensors.dk = gradients[1].view;
  tensors.dv = gradients[2].view;
  validate_backward_launch(entry, tensors, gpu.compute_capability, device);

  // The workspace, stream-ordered: allocated before the launch and freed after it on the caller's
  // stream, so it lives exactly as long as the kernels that use it.
  const std::size_t workspace_bytes =
      entry.backward_workspace_bytes(make_backward_args(entry, tensors, nullptr));
  void* workspace = nullptr;
  FS_CUDA_CHECK(
      cudaMallocAsync(&workspace, std::max<std::size_t>(workspace_bytes, 1), as_stream(stream)));
  const cudaError_t launched =
      entry.launch_backward(make_backward_args(entry, tensors, workspace), as_stream(stream));
  FS_CUDA_CHECK(cudaFreeAsync(workspace, as_stream(stream)));
  FS_CUDA_CHECK(launched);
  for (py::object* output : outputs)
    if (py::isinstance<DeviceArray>(*output)) output->cast<DeviceArray&>().record_ready(stream);
  return {dq, dk, dv, entry.step, entry.config};
}

// The kernel forward() would run for these arrays, without running it.
std::pair<int, KernelConfig> resolve_kernel(const py::object& q, const py::object& k,
                                            const py::object& v, const py::object& o,
                                            std::optional<int> step,
                                            const std::optional<KernelConfig>& config, bool causal,
                                            std::intptr_t stream, const py::object& q_descale,
                                            const py::object& k_descale,
                                            const py::object& v_descale) {
  std::vector<BorrowedArray> arrays;
  const py::handle inputs[] = {q, k, v};
  for (int i = 0; i < 3; ++i)
    arrays.push_back(borrow(inputs[i], kTensorArgumentNames[i], stream));
  if (!o.is_none()) arrays.push_back(borrow(o, "o", stream));
  const Descales descales = borrow_descales(q_descale, k_descale, v_descale, stream);
  const ResolvedKernel resolved = resolve(arrays, descales, step, config, causal);
  return {resolved.entry->step, resolved.entry->config};
}

py::dict kernel_info(int step, const KernelConfig& config) {
  const KernelEntry& entry = find_kernel(built_kernels(), step, config);
  py::dict info;
  info["step"] = entry.step;
  info["config"] = entry.config;
  info["smem_bytes"] = entry.smem_bytes;
  info["threads_per_block"] = entry.threads_per_block;
  info["static_head_counts"] = entry.static_head_counts;
  info["exact_compute_capability"] = entry.exact_compute_capability;
  info["supports_causal"] = entry.supports_causal;
  // From the step's descriptor: K and V with fewer heads than Q (grouped-query attention).
  info["supports_grouped_kv"] = configs::step_descriptor(entry.step).grouped_kv;
  // "forward" (forward(): O and, where `writes_lse`, the log-sum-exp) or "backward" (backward()).
  info["pass"] = std::string(pass_name(configs::step_descriptor(entry.step).pass));
  info["writes_lse"] = configs::step_descriptor(entry.step).writes_lse;
  info["title"] = std::string(configs::step_info(entry.step).title);
  return info;
}

py::tuple config_fields(const KernelConfig& c) {
  return py::make_tuple(static_cast<int>(c.dtype), c.d_head, c.B_r, c.B_c, c.n_warps, c.async_copy,
                        c.eager_load_blocks, c.swizzled, c.Q_mma_load_K_fragments,
                        c.K_mma_load_K_fragments, c.V_mma_load_K_fragments,
                        c.mma_double_buffer_loads, c.optimized_softmax, c.stages, c.consumer_regs,
                        c.deterministic);
}

ShortFormStyle style_argument(const std::string& style) {
  if (style == "full") return ShortFormStyle::full;
  if (style == "without_d_head") return ShortFormStyle::without_d_head;
  if (style == "features_only") return ShortFormStyle::features_only;
  throw py::value_error("short form style \"" + style +
                        "\" is not one of full, without_d_head, features_only");
}

}  // namespace

}  // namespace flashscope::python

PYBIND11_MODULE(_core, m) {
  using namespace flashscope;
  using namespace flashscope::python;
  m.doc() = "flashscope kernels on CUDA arrays through DLPack (docs/python.md)";

  // Rule violations surface as ValueError with the C++ message (it names the value and the rule).
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const LaunchValidationError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const KernelLookupError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const ConfigParseError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const TensorMapError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.attr("__version__") = FLASHSCOPE_VERSION;

  py::class_<KernelConfig>(m, "Config",
                           "The C++ kernel configuration record (kernels/common/config.hpp): its "
                           "short form, fields, equality and total order")
      .def_static(
          "parse", [](std::string_view text) { return parse_config(text); }, py::arg("text"),
          "A config from its short form, e.g. \"(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles\" "
          "(also a demangled FlashForwardKernelConfig{...}); ValueError naming the problem")
      .def("__str__", [](const KernelConfig& c) { return to_short_form(c); })
      .def("__repr__",
           [](const KernelConfig& c) { return "Config.parse('" + to_short_form(c) + "')"; })
      .def(
          "short_form",
          [](const KernelConfig& c, const std::string& style) {
            return to_short_form(c, style_argument(style));
          },
          py::arg("style") = "full", "full, without_d_head or features_only")
      .def(
          "with_dtype",
          [](const KernelConfig& c, const std::string& dtype) {
            return configs::with_dtype(c, dtype_argument(dtype));
          },
          py::arg("dtype"))
      .def(py::self == py::self)
      .def(py::self != py::self)
      .def(py::self < py::self)
      .def(py::self <= py::self)
      .def(py::self > py::self)
      .def(py::self >= py::self)
      .def("__hash__", [](const KernelConfig& c) { return py::hash(config_fields(c)); })
      .def(py::pickle(
          [](const KernelConfig& c) { return py::make_tuple(to_short_form(c)); },
          [](const py::tuple& state) { return parse_config(state[0].cast<std::string>()); }))
      .def_property_readonly("dtype",
                             [](const KernelConfig& c) { return dtype_lower_name(c.dtype); })
      .def_readonly("d_head", &KernelConfig::d_head)
      .def_readonly("B_r", &KernelConfig::B_r)
      .def_readonly("B_c", &KernelConfig::B_c)
      .def_readonly("n_warps", &KernelConfig::n_warps)
      .def_readonly("async_copy", &KernelConfig::async_copy)
      .def_readonly("eager_load_blocks", &KernelConfig::eager_load_blocks)
      .def_readonly("swizzled", &KernelConfig::swizzled)
      .def_readonly("Q_mma_load_K_fragments", &KernelConfig::Q_mma_load_K_fragments)
      .def_readonly("K_mma_load_K_fragments", &KernelConfig::K_mma_load_K_fragments)
      .def_readonly("V_mma_load_K_fragments", &KernelConfig::V_mma_load_K_fragments)
      .def_readonly("mma_double_buffer_loads", &KernelConfig::mma_double_buffer_loads)
      .def_readonly("optimized_softmax", &KernelConfig::optimized_softmax)
      .def_readonly("stages", &KernelConfig::stages)
      .def_readonly("consumer_regs", &KernelConfig::consumer_regs)
      .def_readonly("deterministic", &KernelConfig::deterministic)
      .def_property_readonly("is_hopper", [](const KernelConfig& c) { return is_hopper_config(c); })
      .def_property_readonly("smem_bytes", [](const KernelConfig& c) { return smem_bytes(c); })
      .def_property_readonly("threads_per_block",
                             [](const KernelConfig& c) { return threads_per_block(c); })
      .def_property_readonly("fields", &config_fields,
                             "The 16 fields in declaration order (dtype as 5 = FP16, 15 = BF16): "
                             "the order Config compares in");

  py::class_<DeviceArray>(m, "DeviceArray",
                          "An output the module allocated (cudaMalloc) for a framework it cannot "
                          "allocate in; hand it to any from_dlpack")
      .def(py::init(
               [](const std::array<std::int64_t, 4>& shape, const std::string& dtype, int device) {
                 return DeviceArray(shape, dtype_argument(dtype), device_argument(device));
               }),
           py::arg("shape"), py::arg("dtype"), py::arg("device"))
      .def("__dlpack__", &DeviceArray::dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none())
      .def("__dlpack_device__", &DeviceArray::dlpack_device)
      .def_property_readonly("shape",
                             [](const DeviceArray& a) {
                               const auto& s = a.shape();
                               return py::make_tuple(s[0], s[1], s[2], s[3]);
                             })
      .def_property_readonly("dtype",
                             [](const DeviceArray& a) { return dtype_lower_name(a.dtype()); })
      .def_property_readonly("device", &DeviceArray::device)
      .def_property_readonly("data_ptr", [](const DeviceArray& a) {
        return reinterpret_cast<std::uintptr_t>(a.data());
      });

  m.def(
      "kernels",
      [] {
        std::vector<std::pair<int, KernelConfig>> out;
        for (const KernelEntry* entry : built_kernels().entries())
          out.emplace_back(entry->step, entry->config);
        return out;
      },
      "(step, Config) of every kernel built into this module, in (step, config) order");
  m.def("kernel_info", &kernel_info, py::arg("step"), py::arg("config"));
  m.def("build_info", [] {
    const BuildInfo& info = build_info();
    py::dict out;
    out["kernel_set"] = std::string(info.kernel_set);
    out["steps"] = std::string(info.step_filter);
    out["tune_steps"] = std::string(info.tune_steps);
    out["cuda_architectures"] = std::string(info.cuda_architectures);
    out["git_commit"] = std::string(info.git_commit);
    return out;
  });
  m.def(
      "default_config",
      [](int step, const std::string& dtype, int d_head, std::optional<int> device,
         std::optional<int> compute_capability, const std::string& device_name) {
        // Every rule that needs no GPU first, so a bad call is named as such without one.
        require_step_built(step);
        const DType kernel_dtype = dtype_argument(dtype);
        require_built_kernel(built_kernels(), step, kernel_dtype, d_head);
        GpuTarget gpu{compute_capability.value_or(0), device_name};
        if (compute_capability) {
          require_kernel_capability(*compute_capability);
        } else {
          gpu = describe_gpu(device_argument(device.value_or(0)));
        }
        return default_kernel(built_kernels(), step, kernel_dtype, d_head, gpu).config;
      },
      py::arg("step"), py::arg("dtype"), py::arg("d_head"), py::arg("device"),
      py::arg("compute_capability"), py::arg("device_name"));
  m.def(
      "gpu_pick_order",
      [](int step, int compute_capability, const std::string& device_name) {
        require_step_built(step);
        return gpu_pick_order(step, {compute_capability, device_name});
      },
      py::arg("step"), py::arg("compute_capability"), py::arg("device_name"));
  m.def(
      "describe_gpu",
      [](int device) {
        const GpuTarget gpu = describe_gpu(device);
        return py::make_tuple(gpu.compute_capability, gpu.name);
      },
      py::arg("device"));
  m.def("step_picks", [](int step) {
    configs::StepPicks picks;
    try {
      picks = configs::step_picks(step);
    } catch (const std::out_of_range& error) {
      throw py::value_error(error.what());
    }
    py::dict out;
    out["progression"] = picks.progression;
    out["seed_a100"] = picks.seed_a100;
    out["seed_rtx3090"] = picks.seed_rtx3090;
    out["hopper"] = picks.hopper;
    out["hopper_h100"] = picks.hopper_h100;
    // The progression config at each other head dimension ("progression_d64"), in the order
    // StepPicks::all() and gpu_pick_order list them.
    for (const KernelConfig& c : picks.progression_at_other_d_heads)
      out[py::str("progression_d" + std::to_string(c.d_head))] = c;
    // The configs measured for a feature's cost ("variant_1", ...; B5's deterministic), last.
    for (std::size_t i = 0; i < picks.variants.size(); ++i)
      out[py::str("variant_" + std::to_string(i + 1))] = picks.variants[i];
    return out;
  });
  m.def("tune_set", &configs::tune_set, "The 80 configs of the auto-tune set, in product order");
  m.def("build_list", &configs::build_list, "The tune set as C++ sorts it (KernelConfig order)");
  m.def(
      "cpp_sorted",
      [](std::vector<KernelConfig> list) {
        std::sort(list.begin(), list.end());
        return list;
      },
      py::arg("configs"), "The configs sorted by the C++ record's operator<=>");
  m.def("forward", &forward, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("o"),
        py::arg("allocate_output"), py::arg("step"), py::arg("config"), py::arg("causal"),
        py::arg("stream"), py::arg("timing"), py::arg("lse") = py::none(),
        py::arg("q_descale") = py::none(), py::arg("k_descale") = py::none(),
        py::arg("v_descale") = py::none());
  py::class_<BackwardResult>(m, "BackwardResult")
      .def_readonly("dq", &BackwardResult::dq)
      .def_readonly("dk", &BackwardResult::dk)
      .def_readonly("dv", &BackwardResult::dv)
      .def_readonly("step", &BackwardResult::step)
      .def_readonly("config", &BackwardResult::config);
  m.def("backward", &backward, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("o"),
        py::arg("do"), py::arg("lse"), py::arg("dq"), py::arg("dk"), py::arg("dv"),
        py::arg("allocate_output"), py::arg("step"), py::arg("config"), py::arg("causal"),
        py::arg("stream"), py::arg("launch") = true);
  m.def("resolve_kernel", &resolve_kernel, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("o"),
        py::arg("step"), py::arg("config"), py::arg("causal"), py::arg("stream"),
        py::arg("q_descale") = py::none(), py::arg("k_descale") = py::none(),
        py::arg("v_descale") = py::none());
  py::class_<TimingRequest>(m, "TimingRequest")
      .def(py::init([](double ci_target, int min_rounds, int max_rounds, double cell_seconds,
                       std::string launch_pattern) {
             return TimingRequest{ci_target, min_rounds, max_rounds, cell_seconds,
                                  std::move(launch_pattern)};
           }),
           py::arg("ci_target"), py::arg("min_rounds"), py::arg("max_rounds"),
           py::arg("cell_seconds"), py::arg("launch_pattern"));
  py::class_<Timing>(m, "Timing",
                     "What forward_timed measured: the median per-launch time of the rounds "
                     "and its 95 % order-statistic interval (docs/python.md)")
      .def_readonly("ms", &Timing::ms)
      .def_readonly("ci_low_ms", &Timing::ci_low_ms)
      .def_readonly("ci_high_ms", &Timing::ci_high_ms)
      .def_readonly("rounds", &Timing::rounds)
      .def_readonly("launches_per_round", &Timing::launches_per_round)
      .def_readonly("launch_pattern", &Timing::launch_pattern)
      .def_readonly("pattern_note", &Timing::pattern_note)
      .def_readonly("stop_reason", &Timing::stop_reason)
      .def_readonly("seconds", &Timing::seconds)
      .def_readonly("sm_clock_mhz", &Timing::sm_clock_mhz)
      .def_readonly("sm_clock_min_mhz", &Timing::sm_clock_min_mhz)
      .def_readonly("sm_clock_max_mhz", &Timing::sm_clock_max_mhz)
      .def_readonly("power_mean_w", &Timing::power_mean_w)
      .def_readonly("power_limit_w", &Timing::power_limit_w)
      .def_readonly("clocks_held_by", &Timing::clocks_held_by)
      .def_readonly("conditions", &Timing::conditions)
      .def("__float__", [](const Timing& t) { return t.ms; })
      .def("__repr__", [](const Timing& t) {
        std::string text = "Timing(" + exact_ms(t.ms) + " ms";
        if (t.ci_low_ms && t.ci_high_ms)
          text +=
              ", 95 % interval [" + exact_ms(*t.ci_low_ms) + ", " + exact_ms(*t.ci_high_ms) + "]";
        return text + ", " + std::to_string(t.rounds) + " rounds, " + t.launch_pattern +
               " pattern, stopped: " + t.stop_reason + ")";
      });
  py::class_<ForwardResult>(m, "ForwardResult")
      .def_readonly("o", &ForwardResult::o)
      .def_readonly("step", &ForwardResult::step)
      .def_readonly("config", &ForwardResult::config)
      .def_readonly("timing", &ForwardResult::timing);
}
