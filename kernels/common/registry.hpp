// The dispatch interface: one registry from (step, config) to a launcher and the kernel's
// attributes. Entries are added by generated code that explicitly calls one registration
// function per instantiation (no static initialisers a static-library link could drop).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backward_args.hpp"
#include "config.hpp"
#include "forward_args.hpp"

namespace flashscope {

// Launches the kernel with the geometry of spec §2.5 on `stream`; returns the launch status.
using KernelLauncher = cudaError_t (*)(const ForwardArgs& args, cudaStream_t stream);
// A backward step's launcher: every kernel of one backward pass (docs/spec/backward-track.md §3:
// the preprocess, the main kernel and the dQ conversion) on `stream`; returns the first failing
// launch's status.
using BackwardKernelLauncher = cudaError_t (*)(const BackwardArgs& args, cudaStream_t stream);
// The workspace bytes a backward launch with these arguments needs (BackwardArgs::workspace).
using BackwardWorkspaceBytes = std::size_t (*)(const BackwardArgs& args);

struct KernelEntry {
  int step = 0;
  KernelConfig config{};
  KernelLauncher launch = nullptr;  // forward steps; nullptr for a backward step
  // Backward steps (their descriptor's `.pass` is Pass::backward); nullptr for a forward step.
  BackwardKernelLauncher launch_backward = nullptr;
  BackwardWorkspaceBytes backward_workspace_bytes = nullptr;
  // The __global__ function, for cudaFuncGetAttributes; a backward step's main kernel.
  const void* kernel_function = nullptr;
  int smem_bytes = 0;  // dynamic shared memory per CTA (of the main kernel for a backward step)
  int threads_per_block = 0;
  // Head counts the kernel is compiled for; empty = any (step 16's static GMEM stride).
  std::vector<int> static_head_counts;
  // 0: runs on any sm_80+ device. 90: compiled only for sm_90a (wgmma, setmaxnreg; the Hopper
  // steps), so it runs on compute capability 9.0 alone.
  int exact_compute_capability = 0;
  std::string display_name;  // "<step> <short form>"
  // Whether the kernel applies the causal mask on request (ForwardArgs::causal): the step
  // descriptor's `.causal`, copied in by the registration (kernel_entry.cuh).
  bool supports_causal = false;
};

struct KernelKey {
  int step;
  KernelConfig config;
  constexpr auto operator<=>(const KernelKey&) const = default;
};

class KernelLookupError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class KernelRegistry {
 public:
  // Throws std::logic_error on a duplicate (step, config): generation must not emit one twice.
  void add(KernelEntry entry);

  // Throws KernelLookupError naming the closest built configs of that step, and
  // `never_built` (the rule a known-bad combination breaks, which the caller knows from
  // configs/: this layer knows no step's rules) when there is one.
  const KernelEntry& find(int step, const KernelConfig& config,
                          const std::optional<std::string>& never_built = std::nullopt) const;
  const KernelEntry* try_find(int step, const KernelConfig& config) const;

  // Entries in (step, config) order.
  std::vector<const KernelEntry*> entries() const;
  std::vector<const KernelEntry*> entries_of_step(int step) const;
  std::vector<int> steps() const;
  std::size_t size() const { return entries_.size(); }

  // Up to `count` built configs of `step`, nearest first by the number of differing fields.
  std::vector<KernelConfig> closest_configs(int step, const KernelConfig& config,
                                            std::size_t count = 3) const;

 private:
  std::map<KernelKey, KernelEntry> entries_;
};

// The registry of every kernel this build instantiated (generated from configs/).
const KernelRegistry& built_kernels();

}  // namespace flashscope
