// Which built kernel a Python call runs when it leaves the step or the config open: the step's
// pick for the GPU (configs/config_sets.hpp, StepPicks) in that GPU's order of preference. No
// Python and no GPU here, so the rules are tested on any machine.
#pragma once

#include <string>
#include <vector>

#include "kernels/common/config.hpp"
#include "kernels/common/registry.hpp"

namespace flashscope::python {

// The GPU a call targets, as the CUDA runtime describes it.
struct GpuTarget {
  int compute_capability = 0;  // major * 10 + minor
  std::string name;            // "NVIDIA H100 80GB HBM3"
};

// Step `step`'s picks for `gpu`, most preferred first, in FP16 form as configs/ lists them:
// an H100 takes its own measured pick, then the H200's; any other sm_90 GPU the H200's, then the
// H100's; sm_80 the seed's A100 pick; sm_86 / sm_89 the seed's RTX 3090 pick; then the step's
// progression config and any pick not yet named, in StepPicks order.
std::vector<KernelConfig> gpu_pick_order(int step, const GpuTarget& gpu);

// Whether the entry's machine code runs on a GPU of this compute capability.
bool runs_on(const KernelEntry& entry, int compute_capability);

// Throws KernelLookupError unless `registry` has a kernel of `step` in `dtype` at `d_head`, naming
// the step, the dtype and d_head and what the step has built: what default_kernel needs of any GPU.
void require_built_kernel(const KernelRegistry& registry, int step, DType dtype, int d_head);

// A described GPU (`compute_capability` major * 10 + minor) that the kernels can run on: sm_80 or
// newer. Throws std::invalid_argument naming the value and the rule.
void require_kernel_capability(int compute_capability);

// The kernel of `step` a call with inputs of `dtype` and `d_head` runs on `gpu` when it names no
// config: the first of gpu_pick_order() built in `registry` (in `dtype`), else the step's first
// built kernel of that dtype and d_head in (step, config) order. Throws KernelLookupError naming
// the step, the dtype and d_head and what the step has built when none fits.
const KernelEntry& default_kernel(const KernelRegistry& registry, int step, DType dtype, int d_head,
                                  const GpuTarget& gpu);

}  // namespace flashscope::python
