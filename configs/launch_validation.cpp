#include "configs/launch_validation.hpp"

#include <algorithm>

#include "configs/config_sets.hpp"

namespace flashscope {

namespace {

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

std::string dtype_text(DType dtype) {
  return std::string(dtype_lower_name(dtype));
}

}  // namespace

std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4>& shape) {
  return {shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1};
}

Problem problem_of(const AttentionTensors& tensors) {
  const auto& q = tensors.q.shape;
  Problem problem;
  problem.dtype = tensors.q.dtype;
  problem.batch = static_cast<int>(q[0]);
  problem.seq_len = static_cast<int>(q[1]);
  problem.heads = static_cast<int>(q[2]);
  problem.heads_kv = static_cast<int>(tensors.k.shape[2]);
  problem.d_head = static_cast<int>(q[3]);
  problem.causal = tensors.causal;
  problem.pass = Pass::forward;
  return problem;
}

// The rules every step of a track shares come first; then the step's own, as its descriptor
// (kernels/versions/vNN/step.hpp) declares them. A step without a descriptor has no rules to
// fall back on: it is rejected by name.
std::optional<std::string> unsupported_combination(int step, const KernelConfig& c) {
  const StepDescriptor* descriptor = configs::find_step_descriptor(step);
  // A dtype the step does not run is refused by name first, whatever else the config breaks (an
  // E4M3 config on an Ampere step is also no Ampere config): the dtype axis comes first in the
  // table, so the sentence is the dtype's, naming the steps that run it.
  if (descriptor != nullptr && is_dtype(static_cast<int>(c.dtype)) &&
      !descriptor->dtypes.contains(c.dtype)) {
    Problem problem = configs::problem_at_d_head(c.d_head);
    problem.dtype = c.dtype;
    return configs::step_refusal_message(step, problem);
  }
  // The compile-time rules of the step's pass (a backward step's warps split the KV block).
  const Pass pass = descriptor != nullptr ? descriptor->pass : Pass::forward;
  if (const char* violation = static_config_violation(c, pass); violation[0] != '\0')
    return std::string("invalid config ") + to_short_form(c) + ": " + violation;
  if (descriptor == nullptr)
    return "step " + step_name(step) + " does not exist (steps are " +
           configs::step_list_text(configs::step_numbers()) + ", kernels/versions/steps.hpp)";
  if (descriptor->track == Track::hopper) {
    if (!is_hopper_config(c))
      return "step " + step_name(step) + " is a Hopper step and needs a Hopper config " +
             "(stages_N); " + to_short_form(c) + " is an Ampere config";
  } else if (is_hopper_config(c)) {
    return "step " + step_name(step) + " is an Ampere step (mma.sync, cp.async); " +
           to_short_form(c) + " is a Hopper config (stages_N) for steps " +
           std::to_string(kFirstHopperStep) + "+";
  }
  if (!descriptor->d_heads.contains(c.d_head))
    return configs::step_refusal_message(step,
                                         configs::problem_at_d_head(c.d_head, descriptor->pass));
  if (c.deterministic && !descriptor->deterministic_dq) {
    std::vector<int> with;
    for (const StepDescriptor& other : configs::step_descriptors())
      if (other.deterministic_dq) with.push_back(other.number);
    return "step " + step_name(step) + " has no deterministic option; " + to_short_form(c) +
           " asks for it (dQ added in a fixed order), which " + configs::step_list_text(with) +
           " ha" + (with.size() == 1 ? "s" : "ve") +
           " (their kernels/versions/*/step.hpp declare it)";
  }
  return descriptor->rules(step, c);
}

const KernelEntry& find_kernel(const KernelRegistry& registry, int step,
                               const KernelConfig& config) {
  if (const KernelEntry* entry = registry.try_find(step, config)) return *entry;
  // Only for a step that exists: unsupported_combination rejects the others, and the lookup's
  // own message (this build has no kernel for step N) says the rest.
  std::optional<std::string> rule;
  if (configs::find_step_descriptor(step) != nullptr) rule = unsupported_combination(step, config);
  return registry.find(step, config, rule);
}

std::optional<std::string> descale_violation(const AttentionTensors& tensors) {
  const DType dtype = tensors.q.dtype;
  const std::pair<const char*, const std::optional<DescaleView>*> descales[] = {
      {"q_descale", &tensors.q_descale},
      {"k_descale", &tensors.k_descale},
      {"v_descale", &tensors.v_descale}};
  const std::int64_t heads[] = {tensors.q.shape[2], tensors.k.shape[2], tensors.v.shape[2]};
  for (int i = 0; i < 3; ++i) {
    const auto& [name, descale] = descales[i];
    if (!needs_descales(dtype)) {
      if (descale->has_value())
        return std::string(name) + " is given but the inputs are " + dtype_text(dtype) +
               "; descales belong to e4m3 inputs only (docs/spec/fp8-track.md §1)";
      continue;
    }
    if (!descale->has_value())
      return std::string(name) + " is missing: " + dtype_text(dtype) +
             " inputs need fp32 descales for Q, K and V, one per (sample, head): the real value "
             "is descale x stored (docs/spec/fp8-track.md §1)";
    const DescaleView& view = **descale;
    const std::array<std::int64_t, 2> expected = {tensors.q.shape[0], heads[i]};
    const std::string expected_text =
        "[" + std::to_string(expected[0]) + ", " + std::to_string(expected[1]) + "]";
    if (view.shape != expected)
      return std::string(name) + " has shape [" + std::to_string(view.shape[0]) + ", " +
             std::to_string(view.shape[1]) + "] but must be " + expected_text + " ([batch, " +
             (i == 0 ? "heads" : "heads_kv") + "], one descale per sample and head)";
    if (view.data == nullptr) return std::string(name) + " is a null pointer";
    if (view.location != MemoryLocation::device)
      return std::string(name) + " must be a CUDA (device) array, like the inputs";
    // Block descales (fp8-track.md §4.2): [batch, heads, blocks], so a head steps over its blocks.
    const std::int64_t seq_len = tensors.q.shape[1];
    if (view.block_rows < 0 || view.block_rows > seq_len)
      return std::string(name) + " has block_rows " + std::to_string(view.block_rows) +
             "; a block is 1 to seq_len = " + std::to_string(seq_len) +
             " sequence positions (0: one descale per sample and head)";
    const std::int64_t blocks =
        view.block_rows > 0 ? (seq_len + view.block_rows - 1) / view.block_rows : 1;
    // An extent-1 axis is never stepped along, so its stride does not matter.
    if ((view.shape[0] > 1 && view.strides[0] != view.shape[1] * blocks) ||
        (view.shape[1] > 1 && view.strides[1] != blocks))
      return std::string(name) + " must be contiguous " + expected_text +
             (blocks > 1 ? " x " + std::to_string(blocks) + " blocks" : std::string()) +
             "; it has strides [" + std::to_string(view.strides[0]) + ", " +
             std::to_string(view.strides[1]) + "]";
  }
  if (needs_descales(dtype) && tensors.k_descale->block_rows != tensors.v_descale->block_rows)
    return "k_descale has block_rows " + std::to_string(tensors.k_descale->block_rows) +
           " but v_descale " + std::to_string(tensors.v_descale->block_rows) +
           "; K and V share their blocks (one descale of each per KV tile)";
  return std::nullopt;
}

namespace {

// Whether a descale array is per block of positions rather than one per (sample, head).
bool has_blocks(const std::optional<DescaleView>& view, std::int64_t seq_len) {
  return view && view->block_rows > 0 && view->block_rows < seq_len;
}

// Block descales on a step that reads them (`.block_descales`), with K and V blocks of whole KV
// tiles: the kernel applies one K and one V descale per tile of B_c keys.
std::optional<std::string> block_descale_violation(const KernelEntry& entry,
                                                   const AttentionTensors& tensors) {
  const std::int64_t seq_len = tensors.q.shape[1];
  if (!has_blocks(tensors.q_descale, seq_len) && !has_blocks(tensors.k_descale, seq_len))
    return std::nullopt;
  const StepDescriptor* descriptor = configs::find_step_descriptor(entry.step);
  if (descriptor == nullptr || !descriptor->block_descales) {
    std::vector<int> steps;
    for (const StepDescriptor& step : configs::step_descriptors())
      if (step.block_descales) steps.push_back(step.number);
    return "step " + step_name(entry.step) +
           " reads one descale per sample and head, not per block of positions (block_rows " +
           std::to_string(has_blocks(tensors.q_descale, seq_len) ? tensors.q_descale->block_rows
                                                                 : tensors.k_descale->block_rows) +
           "); block descales run on " + configs::step_list_text(steps);
  }
  const int kv_rows = tensors.k_descale->block_rows;
  if (has_blocks(tensors.k_descale, seq_len) && kv_rows % entry.config.B_c != 0)
    return "k_descale and v_descale have block_rows " + std::to_string(kv_rows) +
           ", not a multiple of the kernel's B_c = " + std::to_string(entry.config.B_c) +
           " (step " + step_name(entry.step) + " applies one K and one V descale per KV tile)";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> launch_refusal(const KernelEntry& entry, const Problem& problem) {
  const KernelConfig& c = entry.config;
  if (const auto violation = problem_violation(problem)) return *violation;
  // A dtype the step does not run at all is the step's refusal by name (naming the steps that
  // run it), not a mismatch with this one kernel's dtype.
  if (const StepDescriptor* descriptor = configs::find_step_descriptor(entry.step);
      descriptor != nullptr && !descriptor->dtypes.contains(problem.dtype))
    return configs::step_refusal_message(entry.step, problem);
  if (problem.d_head != c.d_head)
    return "d_head " + std::to_string(problem.d_head) +
           " does not match the kernel's d_head = " + std::to_string(c.d_head);
  if (problem.dtype != c.dtype)
    return "kernel config dtype " + dtype_text(c.dtype) + " does not match the input dtype " +
           dtype_text(problem.dtype);
  const StepDescriptor* step = configs::find_step_descriptor(entry.step);
  // Steps whose descriptor sets `.partial_blocks` zero-fill, mask and skip the rows past the end.
  if (step == nullptr || !step->partial_blocks) {
    if (problem.seq_len % c.B_r != 0)
      return "seq_len " + std::to_string(problem.seq_len) +
             " is not a multiple of B_r = " + std::to_string(c.B_r);
    if (problem.seq_len % c.B_c != 0)
      return "seq_len " + std::to_string(problem.seq_len) +
             " is not a multiple of B_c = " + std::to_string(c.B_c);
  }
  if (auto reason = unsupported_combination(entry.step, c)) return reason;
  if (auto reason = configs::step_refusal_message(entry.step, problem)) return reason;
  if (const StepDescriptor* descriptor = configs::find_step_descriptor(entry.step);
      descriptor != nullptr && descriptor->problem_rules != nullptr)
    if (auto reason = descriptor->problem_rules(entry.step, c, problem)) return reason;
  const auto& heads = entry.static_head_counts;
  if (!heads.empty() && std::find(heads.begin(), heads.end(), problem.heads) == heads.end()) {
    std::string list;
    for (const int h : heads)
      list += (list.empty() ? "" : ", ") + std::to_string(h);
    return "step " + step_name(entry.step) +
           " is compiled for a static GMEM row stride of d_head x heads with heads in {" + list +
           "}; heads = " + std::to_string(problem.heads) +
           " would read the wrong rows (add it to configs/ to instantiate it)";
  }
  const std::int64_t row_elements =
      static_cast<std::int64_t>(problem.seq_len) * problem.heads * problem.d_head;
  if (row_elements > INT32_MAX)
    return "seq_len x heads x d_head = " + std::to_string(row_elements) +
           " exceeds the 32-bit range the kernels index with";
  return std::nullopt;
}

namespace {

// What a forward and a backward launch check alike: the device (for a kernel of `entry`), then Q,
// K and V (check_inputs).
void check_device(const KernelEntry& entry, int compute_capability, int device) {
  if (entry.exact_compute_capability != 0 && compute_capability != entry.exact_compute_capability)
    reject("step " + step_name(entry.step) + " needs an sm_" +
           std::to_string(entry.exact_compute_capability) + "a (Hopper) GPU; " +
           (device >= 0 ? "device " + std::to_string(device) : std::string("this device")) +
           " is sm_" + std::to_string(compute_capability));
  if (compute_capability < 80)
    reject(
        "flashscope kernels need SM 8.0 or newer (cp.async, mma.sync m16n8k16); this "
        "device is SM " +
        std::to_string(compute_capability / 10) + "." + std::to_string(compute_capability % 10));
}

// Q, K and V's placement and layout, their dtype and K/V's shape against Q's.
void check_inputs(const TensorView& q, const TensorView& k, const TensorView& v) {
  constexpr const char* kInputNames[] = {"Q", "K", "V"};
  const TensorView* inputs[] = {&q, &k, &v};
  for (int i = 0; i < 3; ++i)
    check_placement(*inputs[i], kInputNames[i]);
  const DType dtype = q.dtype;
  if (!is_dtype(static_cast<int>(dtype)))
    reject("Q has dtype " + std::to_string(static_cast<int>(dtype)) + ", which is not " +
           dtype_choices_text());
  for (int i = 1; i < 3; ++i)
    if (inputs[i]->dtype != dtype)
      reject(std::string(kInputNames[i]) + " has dtype " + dtype_text(inputs[i]->dtype) +
             " but Q has " + dtype_text(dtype) + "; Q, K and V must share one dtype");

  const auto& shape = q.shape;
  for (int axis = 0; axis < 4; ++axis)
    if (shape[axis] <= 0) reject("Q has an empty dimension: shape " + shape_string(shape));
  // K and V: Q's batch, length and d_head, and heads_kv heads (a divisor of Q's head count).
  const auto& kv = k.shape;
  if (kv[0] != shape[0] || kv[1] != shape[1] || kv[3] != shape[3] || kv[2] <= 0 ||
      kv[2] > shape[2] || shape[2] % kv[2] != 0)
    reject("K has shape " + shape_string(kv) + " but Q has " + shape_string(shape) +
           "; K and V must be [batch, seq_len, heads_kv, d_head] with Q's batch, seq_len and "
           "d_head and heads_kv a divisor of Q's heads (equal: multi-head attention)");
  if (v.shape != kv)
    reject("V has shape " + shape_string(v.shape) + " but K has " + shape_string(kv) +
           "; they must be equal");
}

// `tensor` (named `name`) must be placed like the inputs and have `like`'s dtype and shape
// (`like_name`).
void check_like(const TensorView& tensor, const char* name, const TensorView& like,
                const char* like_name) {
  check_placement(tensor, name);
  if (tensor.dtype != like.dtype)
    reject(std::string(name) + " has dtype " + dtype_text(tensor.dtype) + " but " + like_name +
           " has " + dtype_text(like.dtype));
  if (tensor.shape != like.shape)
    reject(std::string(name) + " has shape " + shape_string(tensor.shape) + " but " + like_name +
           " has " + shape_string(like.shape) + "; they must be equal");
}

}  // namespace

void validate_launch(const KernelEntry& entry, const AttentionTensors& tensors,
                     int compute_capability, int device) {
  check_inputs(tensors.q, tensors.k, tensors.v);
  check_device(entry, compute_capability, device);
  const DType dtype = tensors.q.dtype;
  const auto& shape = tensors.q.shape;

  if (auto violation = descale_violation(tensors)) reject(*violation);
  if (auto violation = block_descale_violation(entry, tensors)) reject(*violation);

  check_placement(tensors.o, "O");
  if (tensors.o.dtype != output_dtype(dtype))
    reject("O has dtype " + dtype_text(tensors.o.dtype) + " but " + dtype_text(dtype) +
           " inputs write " + dtype_text(output_dtype(dtype)));
  if (tensors.o.shape != shape)
    reject("O has shape " + shape_string(tensors.o.shape) + " but Q has " + shape_string(shape) +
           "; they must be equal");
  if (tensors.softmax_lse != nullptr) {
    const StepDescriptor* descriptor = configs::find_step_descriptor(entry.step);
    if (descriptor == nullptr || !descriptor->writes_lse)
      reject("step " + step_name(entry.step) +
             " does not write the log-sum-exp; the steps that do: " +
             configs::step_list_text(configs::steps_writing_lse()));
  }
  if (auto reason = launch_refusal(entry, problem_of(tensors))) reject(*reason);
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
  args.softmax_lse = tensors.softmax_lse;
  // descale_violation has checked that they are contiguous [batch, heads] device arrays.
  args.q_descale = tensors.q_descale ? tensors.q_descale->data : nullptr;
  args.k_descale = tensors.k_descale ? tensors.k_descale->data : nullptr;
  args.v_descale = tensors.v_descale ? tensors.v_descale->data : nullptr;
  // Positions per descale block; seq_len is one descale per (sample, head).
  const auto rows = [seq_len](const std::optional<DescaleView>& view) {
    return view && view->block_rows > 0 ? view->block_rows : seq_len;
  };
  args.q_descale_rows = rows(tensors.q_descale);
  args.kv_descale_rows = rows(tensors.k_descale);
  return args;
}

Problem problem_of(const BackwardTensors& tensors) {
  Problem problem = problem_of(
      AttentionTensors{tensors.q, tensors.k, tensors.v, tensors.o, tensors.causal, nullptr});
  problem.pass = Pass::backward;
  return problem;
}

void validate_backward_launch(const KernelEntry& entry, const BackwardTensors& tensors,
                              int compute_capability, int device) {
  // A forward step's entry has no backward launcher: say which pass it runs, naming the steps
  // that run the backward (the pass axis's refusal), before any tensor is looked at.
  if (entry.launch_backward == nullptr || entry.backward_workspace_bytes == nullptr) {
    if (auto reason = configs::step_refusal_message(entry.step, problem_of(tensors)))
      reject(*reason);
    reject("step " + step_name(entry.step) + "'s kernel has no backward launcher");
  }
  check_backward_tensors(tensors);
  check_device(entry, compute_capability, device);
  if (auto reason = launch_refusal(entry, problem_of(tensors))) reject(*reason);
}

void check_backward_tensors(const BackwardTensors& tensors) {
  check_inputs(tensors.q, tensors.k, tensors.v);
  check_like(tensors.o, "O", tensors.q, "Q");
  check_like(tensors.d_o, "dO", tensors.q, "Q");
  check_like(tensors.dq, "dQ", tensors.q, "Q");
  check_like(tensors.dk, "dK", tensors.k, "K");
  check_like(tensors.dv, "dV", tensors.k, "K");
  if (tensors.softmax_lse == nullptr)
    reject(
        "the log-sum-exp is a null pointer; the backward needs the forward's fp32 [batch, heads, "
        "seq_len] row log-sum-exp (" +
        configs::step_list_text(configs::steps_writing_lse()) + " write it)");
}

BackwardArgs make_backward_args(const KernelEntry& entry, const BackwardTensors& tensors,
                                void* workspace) {
  (void)entry;  // the backward's block counts are the launcher's business
  BackwardArgs args{};
  args.Q = tensors.q.data;
  args.K = tensors.k.data;
  args.V = tensors.v.data;
  args.O = tensors.o.data;
  args.dO = tensors.d_o.data;
  args.softmax_lse = tensors.softmax_lse;
  args.dQ = const_cast<void*>(tensors.dq.data);
  args.dK = const_cast<void*>(tensors.dk.data);
  args.dV = const_cast<void*>(tensors.dv.data);
  args.workspace = workspace;
  args.batch_stride = tensors.q.strides[0];
  args.seq_stride = tensors.q.strides[1];
  args.head_stride = tensors.q.strides[2];
  args.kv_batch_stride = tensors.k.strides[0];
  args.kv_seq_stride = tensors.k.strides[1];
  args.kv_head_stride = tensors.k.strides[2];
  args.batch = static_cast<int>(tensors.q.shape[0]);
  args.seq_len = static_cast<int>(tensors.q.shape[1]);
  args.n_heads = static_cast<int>(tensors.q.shape[2]);
  args.n_kv_heads = static_cast<int>(tensors.k.shape[2]);
  args.causal = tensors.causal ? 1 : 0;
  return args;
}

}  // namespace flashscope
