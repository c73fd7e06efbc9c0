// Launch-time validation (spec §2.6) plus the checks the seed lacked: d_head, the output's
// shape, dtype and contiguity, and the known-bad combinations of spec §7. Every message names
// the offending value and the rule it breaks.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "config.hpp"
#include "forward_args.hpp"
#include "registry.hpp"
#include "step_descriptor.hpp"

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

struct AttentionTensors {
  TensorView q, k, v, o;
  bool causal = false;  // apply the causal mask (only steps whose descriptor sets `.causal`)
};

class LaunchValidationError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The known-bad (step, config) combinations of spec §7 that a step's code cannot run
// correctly, as the step's descriptor declares them (kernels/versions/vNN/step.hpp: `.rules`);
// nullopt when the step supports the config. A step that does not exist is rejected. The
// instantiation generator uses the same rule, so such a kernel is never built.
std::optional<std::string> unsupported_combination(int step, const KernelConfig& config);

// "step 7 runs d_head 128 only; d_head = 64 runs on step 22 (...)": why `descriptor`'s step
// refuses head dimension `d_head`, naming the steps whose descriptors declare it.
std::string unsupported_d_head_message(const StepDescriptor& descriptor, int d_head);

// "step 22 has no causal mask; causal attention runs on steps 23, 24 (...)": why step `step`
// refuses a causal request, naming the steps whose descriptors set `.causal`.
std::string unsupported_causal_message(int step);

// Throws LaunchValidationError on the first violated rule. `compute_capability` is
// major * 10 + minor of the device the launch targets; `device`, where known, names it in the
// message of an architecture mismatch.
void validate_launch(const KernelEntry& entry, const AttentionTensors& tensors,
                     int compute_capability, int device = -1);

// The kernel argument record for validated tensors.
ForwardArgs make_forward_args(const KernelEntry& entry, const AttentionTensors& tensors);

}  // namespace flashscope
