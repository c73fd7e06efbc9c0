#include "kernels/common/registry.hpp"

#include <algorithm>
#include <stdexcept>

namespace flashscope {

namespace {

int differing_fields(const KernelConfig& a, const KernelConfig& b) {
  return (a.dtype != b.dtype) + (a.d_head != b.d_head) + (a.B_r != b.B_r) + (a.B_c != b.B_c) +
         (a.n_warps != b.n_warps) + (a.async_copy != b.async_copy) +
         (a.eager_load_blocks != b.eager_load_blocks) + (a.swizzled != b.swizzled) +
         (a.Q_mma_load_K_fragments != b.Q_mma_load_K_fragments) +
         (a.K_mma_load_K_fragments != b.K_mma_load_K_fragments) +
         (a.V_mma_load_K_fragments != b.V_mma_load_K_fragments) +
         (a.mma_double_buffer_loads != b.mma_double_buffer_loads) +
         (a.optimized_softmax != b.optimized_softmax) + (a.stages != b.stages) +
         (a.consumer_regs != b.consumer_regs) + (a.deterministic != b.deterministic);
}

}  // namespace

void KernelRegistry::add(KernelEntry entry) {
  const KernelKey key{entry.step, entry.config};
  if (entries_.contains(key))
    throw std::logic_error("kernel registered twice: " + entry.display_name);
  entries_.emplace(key, std::move(entry));
}

const KernelEntry* KernelRegistry::try_find(int step, const KernelConfig& config) const {
  const auto found = entries_.find(KernelKey{step, config});
  return found == entries_.end() ? nullptr : &found->second;
}

const KernelEntry& KernelRegistry::find(int step, const KernelConfig& config,
                                        const std::optional<std::string>& never_built) const {
  if (const KernelEntry* entry = try_find(step, config)) return *entry;
  std::string message =
      "step " + std::to_string(step) + " has no kernel built for " + to_short_form(config);
  if (never_built) message += ", and no build has one: " + *never_built;
  const std::vector<KernelConfig> closest = closest_configs(step, config);
  if (closest.empty()) {
    message += "; this build has no kernel for step " + std::to_string(step) +
               " (see FLASHSCOPE_KERNEL_SET / FLASHSCOPE_STEPS)";
  } else {
    message += "; closest built configs of step " + std::to_string(step) + ":";
    for (const KernelConfig& c : closest)
      message += "\n  " + to_short_form(c);
  }
  throw KernelLookupError(message);
}

std::vector<const KernelEntry*> KernelRegistry::entries() const {
  std::vector<const KernelEntry*> out;
  out.reserve(entries_.size());
  for (const auto& [key, entry] : entries_)
    out.push_back(&entry);
  return out;
}

std::vector<const KernelEntry*> KernelRegistry::entries_of_step(int step) const {
  std::vector<const KernelEntry*> out;
  for (const auto& [key, entry] : entries_)
    if (key.step == step) out.push_back(&entry);
  return out;
}

std::vector<int> KernelRegistry::steps() const {
  std::vector<int> out;
  for (const auto& [key, entry] : entries_)
    if (out.empty() || out.back() != key.step) out.push_back(key.step);
  return out;
}

std::vector<KernelConfig> KernelRegistry::closest_configs(int step, const KernelConfig& config,
                                                          std::size_t count) const {
  std::vector<std::pair<int, KernelConfig>> ranked;
  for (const KernelEntry* entry : entries_of_step(step))
    ranked.emplace_back(differing_fields(entry->config, config), entry->config);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<KernelConfig> out;
  for (std::size_t i = 0; i < ranked.size() && i < count; ++i)
    out.push_back(ranked[i].second);
  return out;
}

}  // namespace flashscope
