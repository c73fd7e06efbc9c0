#include "kernels/common/launch_validation.hpp"

#include <algorithm>

#include "kernels/versions/steps.hpp"

namespace flashscope {

namespace {

constexpr const char* kTensorNames[] = {"Q", "K", "V", "O"};

[[noreturn]] void reject(const std::string& message) {
  throw LaunchValidationError(message);
}

std::string shape_string(const std::array<std::int64_t, 4>& shape) {
  return "[" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + ", " +
         std::to_string(shape[2]) + ", " + std::to_string(shape[3]) + "]";
}

void check_placement(const TensorView& tensor, const char* name) {
  if (tensor.data == nullptr) reject(std::string(name) + " is a null pointer");
  if (tensor.location != MemoryLocation::device)
    reject(std::string(name) + " must be a CUDA (device) tensor");
  if (tensor.strides != contiguous_strides(tensor.shape))
    reject(std::string(name) + " must be contiguous [batch, seq_len, heads, d_head]; shape " +
           shape_string(tensor.shape) + " has strides " + shape_string(tensor.strides));
}

}  // namespace

std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4>& shape) {
  return {shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1};
}

// The rules every step of a track shares come first; then the step's own, as its descriptor
// (kernels/versions/vNN/step.hpp) declares them. A step without a descriptor has no rules to
// fall back on: it is rejected by name.
std::optional<std::string> unsupported_combination(int step, const KernelConfig& c) {
  const StepDescriptor* descriptor = versions::find(step);
  // The compile-time rules of the step's pass (a backward step's warps split the KV block).
  const Pass pass = descriptor != nullptr ? descriptor->pass : Pass::forward;
  if (const char* violation = static_config_violation(c, pass); violation[0] != '\0')
    return std::string("invalid config ") + to_short_form(c) + ": " + violation;
  if (descriptor == nullptr)
    return "step " + std::to_string(step) + " does not exist (steps are " +
           std::to_string(versions::kFirst) + "–" + std::to_string(versions::kLast) +
           ", kernels/versions/steps.hpp)";
  if (descriptor->track == Track::hopper) {
    if (!is_hopper_config(c))
      return "step " + std::to_string(step) + " is a Hopper step and needs a Hopper config " +
             "(stages_N); " + to_short_form(c) + " is an Ampere config";
  } else if (is_hopper_config(c)) {
    return "step " + std::to_string(step) + " is an Ampere step (mma.sync, cp.async); " +
           to_short_form(c) + " is a Hopper config (stages_N) for steps " +
           std::to_string(kFirstHopperStep) + "+";
  }
  if (!descriptor->d_heads.contains(c.d_head))
    return unsupported_d_head_message(*descriptor, c.d_head);
  return descriptor->rules(step, c);
}

void validate_launch(const KernelEntry& entry, const AttentionTensors& tensors,
                     int compute_capability, int device) {
  const KernelConfig& c = entry.config;
  const TensorView* inputs[] = {&tensors.q, &tensors.k, &tensors.v};
  for (int i = 0; i < 3; ++i)
    check_placement(*inputs[i], kTensorNames[i]);

  if (entry.exact_compute_capability != 0 && compute_capability != entry.exact_compute_capability)
    reject("step " + std::to_string(entry.step) + " needs an sm_" +
           std::to_string(entry.exact_compute_capability) + "a (Hopper) GPU; " +
           (device >= 0 ? "device " + std::to_string(device) : std::string("this device")) +
           " is sm_" + std::to_string(compute_capability));
  if (compute_capability < 80)
    reject(
        "flashscope kernels need SM 8.0 or newer (cp.async, mma.sync m16n8k16); this "
        "device is SM " +
        std::to_string(compute_capability / 10) + "." + std::to_string(compute_capability % 10));
  const DType dtype = tensors.q.dtype;
  if (dtype != DType::FP16 && dtype != DType::BF16)
    reject("only fp16 and bf16 inputs are supported; Q has dtype " +
           std::to_string(static_cast<int>(dtype)));
  for (int i = 1; i < 3; ++i)
    if (inputs[i]->dtype != dtype)
      reject(std::string(kTensorNames[i]) + " has dtype " +
             std::string(dtype_lower_name(inputs[i]->dtype)) + " but Q has " +
             std::string(dtype_lower_name(dtype)) + "; Q, K and V must share one dtype");
  if (c.dtype != dtype)
    reject("kernel config dtype " + std::string(dtype_lower_name(c.dtype)) +
           " does not match the input dtype " + std::string(dtype_lower_name(dtype)));
  for (int i = 1; i < 3; ++i)
    if (inputs[i]->shape != tensors.q.shape)
      reject(std::string(kTensorNames[i]) + " has shape " + shape_string(inputs[i]->shape) +
             " but Q has " + shape_string(tensors.q.shape) + "; they must be equal");

  const auto& shape = tensors.q.shape;
  for (int axis = 0; axis < 4; ++axis)
    if (shape[axis] <= 0) reject("Q has an empty dimension: shape " + shape_string(shape));
  if (shape[3] != c.d_head)
    reject("d_head " + std::to_string(shape[3]) +
           " does not match the kernel's d_head = " + std::to_string(c.d_head));
  const std::int64_t seq_len = shape[1];
  if (seq_len % c.B_r != 0)
    reject("seq_len " + std::to_string(seq_len) +
           " is not a multiple of B_r = " + std::to_string(c.B_r));
  if (seq_len % c.B_c != 0)
    reject("seq_len " + std::to_string(seq_len) +
           " is not a multiple of B_c = " + std::to_string(c.B_c));

  check_placement(tensors.o, "O");
  if (tensors.o.dtype != dtype)
    reject("O has dtype " + std::string(dtype_lower_name(tensors.o.dtype)) +
           " but the inputs have " + std::string(dtype_lower_name(dtype)));
  if (tensors.o.shape != shape)
    reject("O has shape " + shape_string(tensors.o.shape) + " but Q has " + shape_string(shape) +
           "; they must be equal");

  if (auto reason = unsupported_combination(entry.step, c)) reject(*reason);
  if (tensors.causal && !entry.supports_causal) reject(unsupported_causal_message(entry.step));
  const auto& heads = entry.static_head_counts;
  if (!heads.empty() && std::find(heads.begin(), heads.end(), shape[2]) == heads.end()) {
    std::string list;
    for (const int h : heads)
      list += (list.empty() ? "" : ", ") + std::to_string(h);
    reject("step " + std::to_string(entry.step) + " is compiled for a static GMEM row stride of " +
           "d_head x heads with heads in {" + list + "}; heads = " + std::to_string(shape[2]) +
           " would read the wrong rows (add it to configs/ to instantiate it)");
  }
  if (shape[1] * shape[2] * shape[3] > INT32_MAX || shape[1] > INT32_MAX)
    reject("seq_len x heads x d_head = " + std::to_string(shape[1] * shape[2] * shape[3]) +
           " exceeds the 32-bit range the kernels index with");
}

// The head dimensions a step's descriptor declares are the ones its tiles, budgets and tests were
// made for.
std::string unsupported_d_head_message(const StepDescriptor& descriptor, int d_head) {
  std::string own;
  for (const int d : descriptor.d_heads)
    own += (own.empty() ? "" : ", ") + std::to_string(d);
  std::string others;
  int count = 0;
  for (const StepDescriptor& step : versions::kAll)
    if (step.d_heads.contains(d_head)) {
      others += (others.empty() ? "" : ", ") + std::to_string(step.number);
      ++count;
    }
  return "step " + std::to_string(descriptor.number) + " runs d_head " + own +
         (descriptor.d_heads.size() == 1 ? " only" : "") + "; d_head = " + std::to_string(d_head) +
         " runs on " +
         (count == 0 ? std::string("no step") : (count == 1 ? "step " : "steps ") + others) +
         " (the .d_heads of kernels/versions/vNN/step.hpp)";
}

std::string unsupported_causal_message(int step) {
  std::string steps;
  int count = 0;
  for (const StepDescriptor& descriptor : versions::kAll)
    if (descriptor.causal) {
      steps += (steps.empty() ? "" : ", ") + std::to_string(descriptor.number);
      ++count;
    }
  return "step " + std::to_string(step) + " has no causal mask; causal attention runs on " +
         (count == 0 ? std::string("no step") : (count == 1 ? "step " : "steps ") + steps) +
         " (the .causal of kernels/versions/vNN/step.hpp)";
}

ForwardArgs make_forward_args(const KernelEntry& entry, const AttentionTensors& tensors) {
  const auto& shape = tensors.q.shape;
  const auto& strides = tensors.q.strides;
  const int seq_len = static_cast<int>(shape[1]);
  ForwardArgs args{};
  args.Q = tensors.q.data;
  args.K = tensors.k.data;
  args.V = tensors.v.data;
  args.O = const_cast<void*>(tensors.o.data);
  args.batch_stride = strides[0];
  args.seq_stride = strides[1];
  args.head_stride = strides[2];
  args.batch = static_cast<int>(shape[0]);
  args.seq_len = seq_len;
  args.n_heads = static_cast<int>(shape[2]);
  args.n_Q_blocks = (seq_len + entry.config.B_r - 1) / entry.config.B_r;
  args.n_KV_blocks = (seq_len + entry.config.B_c - 1) / entry.config.B_c;
  args.causal = tensors.causal ? 1 : 0;
  args.n_kv_heads = static_cast<int>(tensors.k.shape[2]);
  args.kv_batch_stride = tensors.k.strides[0];
  args.kv_seq_stride = tensors.k.strides[1];
  args.kv_head_stride = tensors.k.strides[2];
  args.softmax_lse = nullptr;
  return args;
}

}  // namespace flashscope
