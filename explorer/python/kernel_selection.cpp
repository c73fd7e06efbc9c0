#include "explorer/python/kernel_selection.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "configs/config_sets.hpp"

namespace flashscope::python {

std::vector<KernelConfig> gpu_pick_order(int step, const GpuTarget& gpu) {
  const configs::StepPicks picks = configs::step_picks(step);
  std::vector<std::optional<KernelConfig>> preferred;
  if (gpu.compute_capability == 90) {
    if (gpu.name.find("H100") != std::string::npos)
      preferred = {picks.hopper_h100, picks.hopper};
    else
      preferred = {picks.hopper, picks.hopper_h100};
  } else if (gpu.compute_capability == 80) {
    preferred = {picks.seed_a100};
  } else if (gpu.compute_capability == 86 || gpu.compute_capability == 89) {
    preferred = {picks.seed_rtx3090};
  }
  preferred.push_back(picks.progression);
  for (const KernelConfig& pick : picks.all())
    preferred.push_back(pick);

  std::vector<KernelConfig> order;
  for (const std::optional<KernelConfig>& pick : preferred)
    if (pick && std::find(order.begin(), order.end(), *pick) == order.end()) order.push_back(*pick);
  return order;
}

bool runs_on(const KernelEntry& entry, int compute_capability) {
  if (entry.exact_compute_capability != 0)
    return compute_capability == entry.exact_compute_capability;
  return compute_capability >= 80;
}

const KernelEntry& default_kernel(const KernelRegistry& registry, int step, DType dtype, int d_head,
                                  const GpuTarget& gpu) {
  for (KernelConfig pick : gpu_pick_order(step, gpu)) {
    pick = configs::with_dtype(pick, dtype);
    if (pick.d_head != d_head) continue;
    if (const KernelEntry* entry = registry.try_find(step, pick)) return *entry;
  }
  for (const KernelEntry* entry : registry.entries_of_step(step))
    if (entry->config.dtype == dtype && entry->config.d_head == d_head) return *entry;
  require_built_kernel(registry, step, dtype, d_head);
  throw std::logic_error("default_kernel: require_built_kernel found a kernel the loop did not");
}

void require_kernel_capability(int compute_capability) {
  if (compute_capability < 80)
    throw std::invalid_argument(
        "compute_capability " + std::to_string(compute_capability) +
        " is not a GPU the kernels run on: major * 10 + minor of sm_80 or newer, e.g. 80 (A100), "
        "86 (RTX 3090), 90 (H100, H200)");
}

void require_built_kernel(const KernelRegistry& registry, int step, DType dtype, int d_head) {
  // A dtype the step does not run: its descriptor's refusal by name (the dtype axis comes first
  // in the table), not a kernel this build lacks.
  if (const StepDescriptor* descriptor = configs::find_step_descriptor(step);
      descriptor != nullptr && !descriptor->dtypes.contains(dtype)) {
    Problem problem = configs::problem_at_d_head(d_head);
    problem.dtype = dtype;
    throw KernelLookupError(*configs::step_refusal_message(step, problem));
  }
  std::set<int> built_d_heads;
  std::set<DType> built_dtypes;
  for (const KernelEntry* entry : registry.entries_of_step(step)) {
    built_dtypes.insert(entry->config.dtype);
    if (entry->config.dtype != dtype) continue;
    if (entry->config.d_head == d_head) return;
    built_d_heads.insert(entry->config.d_head);
  }
  std::string message = "step " + std::to_string(step) + " has no " +
                        std::string(dtype_lower_name(dtype)) + " kernel built for d_head " +
                        std::to_string(d_head);
  if (!built_d_heads.empty()) {
    message += "; its " + std::string(dtype_lower_name(dtype)) + " kernels take d_head ";
    bool first = true;
    for (const int built : built_d_heads) {
      message += (first ? "" : ", ") + std::to_string(built);
      first = false;
    }
  } else if (registry.entries_of_step(step).empty()) {
    message += "; this build has no kernel for step " + std::to_string(step) +
               " (see FLASHSCOPE_KERNEL_SET / FLASHSCOPE_STEPS)";
  } else {
    std::string names;
    for (const DType built : built_dtypes)
      names += (names.empty() ? "" : ", ") + std::string(dtype_lower_name(built));
    message += "; step " + std::to_string(step) + " is built in " + names + " only";
  }
  throw KernelLookupError(message);
}

}  // namespace flashscope::python
