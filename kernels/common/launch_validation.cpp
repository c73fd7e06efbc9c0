#include "kernels/common/launch_validation.hpp"

#include <algorithm>

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

namespace {

// The Hopper track's per-step rules (hopper-track.md §3); nullopt when the step runs the config.
std::optional<std::string> unsupported_hopper_combination(int step, const KernelConfig& c) {
  const std::string name = "step " + std::to_string(step);
  const int consumers = consumer_warpgroups(c);
  if (step <= 18) {
    if (producer_warpgroups(c) != 0)
      return name + " has no producer warpgroup: n_warps must be 4 x B_r / 64 = " +
             std::to_string(4 * consumers) + ", not " + std::to_string(c.n_warps);
    if (step == 17 && c.stages != 1)
      return "step 17 copies K and V with cp.async into one buffer each: stages must be 1, not " +
             std::to_string(c.stages);
    if (step == 17 && (c.B_r % (4 * c.n_warps) != 0 || c.B_c % (4 * c.n_warps) != 0))
      return "step 17 copies blocks in patches of 32 * n_warps / 8 rows; B_r = " +
             std::to_string(c.B_r) + " and B_c = " + std::to_string(c.B_c) +
             " must both be multiples of " + std::to_string(4 * c.n_warps);
    if (c.consumer_regs != 0)
      return name +
             " does not reallocate registers (setmaxnreg comes with the producer "
             "warpgroup of step 19): consumer_regs must be 0";
    return std::nullopt;
  }
  if (consumers != 2)
    return name + " runs one producer and two consumer warpgroups: B_r must be 128, not " +
           std::to_string(c.B_r);
  if (producer_warpgroups(c) != 1)
    return name + " needs the producer warpgroup: n_warps must be 12, not " +
           std::to_string(c.n_warps);
  if (c.consumer_regs == 0)
    return name + " reallocates registers with setmaxnreg: consumer_regs (regs_N) must be set";
  if (c.stages < 2)
    return name + " overlaps loads with compute through a circular buffer: stages must be >= 2";
  // Step 22 (docs/versions/22.md) stores O from a tile of its own, so the next tile's Q can load
  // while O leaves: one B_r x d_head tile more than smem_bytes() counts.
  if (step >= 22) {
    const int bytes = smem_bytes(c) + c.B_r * c.d_head * kElementBytes;
    if (bytes > kHopperMaxSmemBytes)
      return name +
             " keeps Q, O and stages x (K + V) tiles in shared memory: " + std::to_string(bytes) +
             " bytes at B_c = " + std::to_string(c.B_c) +
             " and stages = " + std::to_string(c.stages) +
             " exceed the 232448 bytes (227 KB) a block may opt in to";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> unsupported_combination(int step, const KernelConfig& c) {
  if (const char* violation = static_config_violation(c); violation[0] != '\0')
    return std::string("invalid config ") + to_short_form(c) + ": " + violation;
  if (step >= kFirstHopperStep) {
    if (!is_hopper_config(c))
      return "step " + std::to_string(step) + " is a Hopper step and needs a Hopper config " +
             "(stages_N); " + to_short_form(c) + " is an Ampere config";
    return unsupported_hopper_combination(step, c);
  }
  if (is_hopper_config(c))
    return "step " + std::to_string(step) + " is an Ampere step (mma.sync, cp.async); " +
           to_short_form(c) + " is a Hopper config (stages_N) for steps " +
           std::to_string(kFirstHopperStep) + "+";
  // Spec §7.1: steps 1–7 copy K and V per warp, B_c / n_warps rows each, in 8-row patches
  // (4 rows x 2 column halves per instruction); fewer rows than that leaves K/V unloaded.
  if (step <= 7 && c.B_c / 8 < c.n_warps)
    return "steps 1–7 copy K/V per warp and need B_c / 8 >= n_warps; B_c = " +
           std::to_string(c.B_c) + " with " + std::to_string(c.n_warps) +
           " warps would leave K and V unloaded (spec §7.1)";
  // Steps 8+ copy CTA-cooperatively in patches of (threads / 8) rows, and each patch must hold
  // whole 8-row swizzle periods so the per-thread swizzle stays a compile-time step.
  if (step >= 8 && c.n_warps % 2 != 0)
    return "steps 8–16 copy in patches of 4 * n_warps rows, which must be a multiple of 8 (the "
           "swizzle period); n_warps = " +
           std::to_string(c.n_warps) + " is odd";
  if (step >= 8 && (c.B_c % (4 * c.n_warps) != 0 || c.B_r % (4 * c.n_warps) != 0))
    return "steps 8–16 copy blocks in patches of 32 * n_warps / 8 rows; B_r = " +
           std::to_string(c.B_r) + " and B_c = " + std::to_string(c.B_c) +
           " must both be multiples of " + std::to_string(4 * c.n_warps);
  return std::nullopt;
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
  return args;
}

}  // namespace flashscope
