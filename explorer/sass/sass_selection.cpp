#include "explorer/sass/sass_selection.hpp"

#include <array>

#include "configs/config_sets.hpp"

namespace flashscope::sass {

namespace {

// The parts a config can play in a step (configs::StepPicks), with the name people know them by.
enum class Part { progression, seed_a100, seed_rtx3090, hopper, hopper_h100 };

std::optional<KernelConfig> pick_of(const configs::StepPicks& picks, Part part) {
  switch (part) {
    case Part::progression:
      return picks.progression;
    case Part::seed_a100:
      return picks.seed_a100;
    case Part::seed_rtx3090:
      return picks.seed_rtx3090;
    case Part::hopper:
      return picks.hopper;
    case Part::hopper_h100:
      return picks.hopper_h100;
  }
  return std::nullopt;
}

std::string_view part_name(Part part) {
  switch (part) {
    case Part::progression:
      return "progression config";
    case Part::seed_a100:
      return "seed A100 pick";
    case Part::seed_rtx3090:
      return "seed RTX 3090 pick";
    case Part::hopper:
      return "H200 pick";
    case Part::hopper_h100:
      return "H100 pick";
  }
  return "";
}

constexpr std::array kParts = {Part::progression, Part::seed_a100, Part::seed_rtx3090, Part::hopper,
                               Part::hopper_h100};

// Every step kernels/versions/steps.hpp lists has picks: the forward steps 1..kLast and the
// backward track's B1, B2, ... (numbered from kFirstBackwardStep).
bool is_known_step(int step) {
  return configs::find_step_descriptor(step) != nullptr;
}

std::optional<configs::StepPicks> picks_of(int step) {
  if (!is_known_step(step)) return std::nullopt;
  return configs::step_picks(step);
}

// The two progressions never compare with each other: a backward step's kernels (several per
// instantiation, computing dQ, dK and dV) have no forward counterpart, and step numbers from
// kFirstBackwardStep on are the backward track's (backward-track.md §1.1).
bool same_pass(int a, int b) {
  return (a >= kFirstBackwardStep) == (b >= kFirstBackwardStep);
}

bool same_ignoring_dtype(const std::optional<KernelConfig>& pick, const KernelConfig& config) {
  return pick && configs::with_dtype(*pick, config.dtype) == config;
}

}  // namespace

const SassKernelRecord* default_kernel(const SassArtifact& artifact, int step,
                                       std::string_view arch, DType dtype) {
  const auto kernels = artifact.kernels_of(step, arch);
  if (kernels.empty()) return nullptr;
  if (is_known_step(step)) {
    const KernelConfig headline = configs::with_dtype(configs::headline_config(step), dtype);
    for (const SassKernelRecord* record : kernels)
      if (record->config == headline) return record;
  }
  for (const SassKernelRecord* record : kernels)
    if (record->config.dtype == dtype) return record;
  return kernels.front();
}

std::string default_architecture(const SassArtifact& artifact, int step) {
  std::string best;
  int best_size = -1;
  for (const std::string& arch : artifact.architectures()) {
    const SassKernelRecord* record = default_kernel(artifact, step, arch);
    if (record == nullptr) continue;
    const int size = record->instructions.value_or(0);
    if (size > best_size) {
      best = arch;
      best_size = size;
    }
  }
  return best;
}

std::optional<Counterpart> previous_step_counterpart(const SassArtifact& artifact,
                                                     const SassKernelRecord& current) {
  int previous = 0;
  for (const int step : artifact.steps())
    if (step < current.step && same_pass(step, current.step) &&
        !artifact.kernels_of(step, current.arch).empty())
      previous = step;
  if (previous == 0) return std::nullopt;
  const std::string label = "step " + step_name(previous) + "'s ";

  if (const SassKernelRecord* same = artifact.find(previous, current.config, current.arch))
    return Counterpart{same, "same config"};

  const auto current_picks = picks_of(current.step);
  const auto previous_picks = picks_of(previous);
  if (current_picks && previous_picks) {
    for (const Part part : kParts) {
      if (!same_ignoring_dtype(pick_of(*current_picks, part), current.config)) continue;
      // The same part first; else the config the step started from: step 7's progression config
      // for the seed's GPU picks of step 8, step 16's Hopper picks for step 17's progression
      // config.
      for (const Part candidate :
           {part, Part::progression, Part::hopper, Part::hopper_h100, Part::seed_a100}) {
        const std::optional<KernelConfig> counterpart = pick_of(*previous_picks, candidate);
        if (!counterpart) continue;
        const KernelConfig wanted = configs::with_dtype(*counterpart, current.config.dtype);
        if (const SassKernelRecord* record = artifact.find(previous, wanted, current.arch))
          return Counterpart{record, label + std::string(part_name(candidate))};
      }
    }
  }
  if (const SassKernelRecord* fallback =
          default_kernel(artifact, previous, current.arch, current.config.dtype))
    return Counterpart{fallback, label + "default kernel (no kernel of the same config or part)"};
  return std::nullopt;
}

bool is_progression_kernel(int step, const KernelConfig& config, bool include_neighbour_picks) {
  for (const int candidate : {step, step - 1, step + 1}) {
    if (candidate != step && !include_neighbour_picks) continue;
    if (!same_pass(candidate, step)) continue;
    const auto picks = picks_of(candidate);
    if (!picks) continue;
    // Every config the prog set builds for the step: its parts above, its progression config at
    // the other head dimensions and its feature variants (StepPicks::all()).
    for (const KernelConfig& pick : picks->all())
      if (same_ignoring_dtype(pick, config)) return true;
  }
  return false;
}

}  // namespace flashscope::sass
