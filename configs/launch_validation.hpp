// Launch-time validation (spec §2.6) plus the checks the seed lacked: the problem against the
// kernel (d_head, dtype, sequence length, the axes its step declares), the tensors' shapes, dtypes
// and layout, and the known-bad combinations of spec §7. Every message names the offending value
// and the rule it breaks. The problem-level checks need no GPU (launch_refusal), so the sweep plan
// and the Python module apply them before any device is looked for.
//
// It sits in configs/ (not kernels/common) because it answers from the step descriptors that
// kernels/versions/steps.hpp lists: kernels/common includes nothing from kernels/versions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "kernels/common/backward_args.hpp"
#include "kernels/common/config.hpp"
#include "kernels/common/forward_args.hpp"
#include "kernels/common/problem.hpp"
#include "kernels/common/registry.hpp"
#include "kernels/common/step_descriptor.hpp"

namespace flashscope {

enum class MemoryLocation { device, host };

// A non-owning view of one [batch, seq_len, heads, d_head] tensor.
struct TensorView {
  const void* data = nullptr;
  DType dtype = DType::FP16;
  MemoryLocation location = MemoryLocation::device;
  std::array<std::int64_t, 4> shape{};    // batch, seq_len, heads, d_head
  std::array<std::int64_t, 4> strides{};  // in elements
};

// Row-major contiguous strides for `shape`.
std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4>& shape);

// A non-owning view of one fp32 descale array (docs/spec/fp8-track.md §1): one factor per
// (sample, head), [batch, heads] for Q and [batch, heads_kv] for K and V; the real value of an
// e4m3 input element is descale x stored.
// With block_rows > 0 (the accuracy step's block quantization, fp8-track.md §4.2) the array holds
// one factor per block of block_rows sequence positions of each (sample, head): contiguous
// [batch, heads, ceil(seq_len / block_rows)], `shape` still [batch, heads] and `strides` those of
// the first two axes. K and V take one block_rows, a multiple of the kernel's B_c (a KV tile has
// one descale); only steps whose descriptor sets `.block_descales` read block descales.
struct DescaleView {
  const float* data = nullptr;
  MemoryLocation location = MemoryLocation::device;
  std::array<std::int64_t, 2> shape{};    // batch, heads (heads_kv for K and V)
  std::array<std::int64_t, 2> strides{};  // in elements
  int block_rows = 0;                     // 0: one descale per (sample, head)
};

// The tensors of one forward launch: Q and O [batch, seq_len, heads, d_head], K and V
// [batch, seq_len, heads_kv, d_head] (heads_kv = heads, or a divisor of it: grouped-query
// attention), and optionally the fp32 log-sum-exp output [batch, heads, seq_len]. e4m3 inputs
// come with their three descale arrays; 16-bit inputs with none.
struct AttentionTensors {
  TensorView q, k, v, o;
  bool causal = false;  // apply the causal mask (only steps whose descriptor sets `.causal`)
  float* softmax_lse = nullptr;  // only steps whose descriptor sets `.writes_lse`
  std::optional<DescaleView> q_descale, k_descale, v_descale;
};

// The forward problem the tensors pose (dtype and shape from Q, heads_kv from K).
Problem problem_of(const AttentionTensors& tensors);

// The tensors of one backward launch (docs/spec/backward-track.md §1): Q, O, dO and dQ
// [batch, seq_len, heads, d_head], K, V, dK and dV [batch, seq_len, heads_kv, d_head], all of one
// dtype and contiguous, and the forward's fp32 row log-sum-exp [batch, heads, seq_len].
struct BackwardTensors {
  TensorView q, k, v, o, d_o, dq, dk, dv;
  const float* softmax_lse = nullptr;
  bool causal = false;
};

// The backward problem the tensors pose (pass = backward).
Problem problem_of(const BackwardTensors& tensors);

class LaunchValidationError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The first rule the descale arrays break, checked without a GPU: each of Q, K and V has one
// exactly when the inputs are e4m3 (needs_descales), [batch, heads] for Q and [batch, heads_kv]
// for K and V, contiguous, in device memory; nullopt when they keep them. The Python module asks
// it before it asks whether any step runs the problem, so a wrong descale is named as such even
// while no step runs e4m3.
std::optional<std::string> descale_violation(const AttentionTensors& tensors);

// The known-bad (step, config) combinations of spec §7 that a step's code cannot run
// correctly, as the step's descriptor declares them (kernels/versions/vNN/step.hpp: `.rules`);
// nullopt when the step supports the config. A step that does not exist is rejected. The
// instantiation generator uses the same rule, so such a kernel is never built.
std::optional<std::string> unsupported_combination(int step, const KernelConfig& config);

// registry.find(step, config), whose KernelLookupError also names the rule a known-bad
// combination breaks ("..., and no build has one: steps 1–7 copy K/V per warp ...").
const KernelEntry& find_kernel(const KernelRegistry& registry, int step,
                               const KernelConfig& config);

// Why the built kernel `entry` cannot run `problem`, checked without a GPU: the problem's own
// rules, the kernel's d_head and dtype, the sequence length against its tiles, the step's
// declared axes (configs::step_refusal_message: "step 22 has no causal mask; causal attention
// runs on steps 23, 24, 25, 26 (…)"), the static head counts and the 32-bit index range; nullopt
// when it can.
std::optional<std::string> launch_refusal(const KernelEntry& entry, const Problem& problem);

// Throws LaunchValidationError on the first violated rule: the tensors' placement, layout and
// shapes, the device (`compute_capability` is major * 10 + minor of the device the launch
// targets; `device`, where known, names it), then launch_refusal of the problem they pose.
void validate_launch(const KernelEntry& entry, const AttentionTensors& tensors,
                     int compute_capability, int device = -1);

// The kernel argument record for validated tensors.
ForwardArgs make_forward_args(const KernelEntry& entry, const AttentionTensors& tensors);

// validate_launch for a backward step: a forward step's entry is refused by its pass, then the
// tensors (each gradient shaped, typed and placed like its input), the log-sum-exp pointer, the
// device and launch_refusal of the backward problem. Throws LaunchValidationError.
void validate_backward_launch(const KernelEntry& entry, const BackwardTensors& tensors,
                              int compute_capability, int device = -1);

// The checks of validate_backward_launch that need neither a kernel nor a GPU: the tensors'
// placement, layout, dtypes and shapes against each other and the log-sum-exp pointer.
void check_backward_tensors(const BackwardTensors& tensors);

// The backward argument record for validated tensors and a workspace of
// entry.backward_workspace_bytes(args) bytes (ask it with workspace = nullptr first).
BackwardArgs make_backward_args(const KernelEntry& entry, const BackwardTensors& tensors,
                                void* workspace);

}  // namespace flashscope
