// Which kernels of a SASS artifact the views compare: the kernel a step is shown with, and the
// previous step's kernel it is compared against.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "explorer/sass/sass_artifact.hpp"

namespace flashscope::sass {

// The kernel of `step` on `arch` a view shows when no config is named: the step's headline
// config (configs::headline_config) in `dtype`, else its first kernel in `dtype`, else its first.
const SassKernelRecord* default_kernel(const SassArtifact& artifact, int step,
                                       std::string_view arch, DType dtype = DType::FP16);

// The architecture a step is shown on when none is chosen: the one where its default kernel has
// the most instructions (a Hopper-only step built for sm_80 would be a stub there), else the
// first; empty when the step has no kernel.
std::string default_architecture(const SassArtifact& artifact, int step);

struct Counterpart {
  const SassKernelRecord* record = nullptr;
  std::string
      relation;  // how it was chosen, for people: "same config", "step 7's progression config"
};

// The kernel `current` is compared with: the nearest earlier step of the same pass (forward or
// backward) in the artifact, with
//   1. the same config, else
//   2. the config that plays the same part there (configs::StepPicks: the seed's A100 pick
//      against the previous A100 pick, ...), else the one the step started from (its
//      progression config, then its H200, H100 and A100 picks: step 8's GPU picks against step
//      7's progression config, step 17's progression config against step 16's H200 pick), else
//   3. that step's default kernel in the same dtype.
// nullopt when no earlier step has a kernel on the same architecture.
std::optional<Counterpart> previous_step_counterpart(const SassArtifact& artifact,
                                                     const SassKernelRecord& current);

// Whether `config` is one of the configs `step`'s descriptor declares (configs::StepPicks::all():
// its progression config and picks, at every head dimension, and its feature variants) in any
// dtype, or, with `include_neighbour_picks`, one of step - 1's or step + 1's of the same pass
// (what a shipped artifact keeps: the measured kernels, and each neighbour's picks built at this
// step, so that both sides of a step's change exist in the same config). Backward steps (B1 =
// kFirstBackwardStep, ...) count as well; their neighbours are backward steps only.
bool is_progression_kernel(int step, const KernelConfig& config, bool include_neighbour_picks);

}  // namespace flashscope::sass
