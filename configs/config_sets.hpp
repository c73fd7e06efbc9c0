// Which kernels exist (spec §4.0, §5): the steps as their descriptors (kernels/versions/steps.hpp)
// declare them, with each step's progression config or per-GPU picks; the seed's auto-tune space
// with its filter rules, each Hopper step's tune set, the selection keys and the build sets. The
// build generates the instantiation sources from this file; the explorer answers `--list-set`
// from it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/common/config.hpp"
#include "kernels/common/problem.hpp"
#include "kernels/common/problem_axes.hpp"
#include "kernels/common/step_descriptor.hpp"

namespace flashscope::configs {

// The steps kernels/versions/steps.hpp lists; from kFirstHopperStep on, the Hopper track
// (hopper-track.md). Only config_sets.cpp includes that list: the last step numbers are run-time
// constants here, so that adding a step recompiles that file and not every file that includes
// this header (docs/adding-a-step.md). The forward steps are numbered from 1, the backward
// steps from kFirstBackwardStep (kernels/common/step_descriptor.hpp).
constexpr int kFirstStep = 1;
extern const int kLastStep;          // the newest forward step
extern const int kLastBackwardStep;  // the newest backward step

// Every step's descriptor: the forward steps in order, then the backward steps in order.
std::span<const StepDescriptor> step_descriptors();
std::span<const StepDescriptor> forward_step_descriptors();   // steps kFirstStep..kLastStep
std::span<const StepDescriptor> backward_step_descriptors();  // B1..the newest backward step
// The descriptor of step `step`, or nullptr when no step has that number.
const StepDescriptor* find_step_descriptor(int step);

// A step's descriptor in the form the host tools use (built from kernels/versions/vNN/step.hpp).
struct StepInfo {
  int step;
  std::string_view title;          // the seed's iteration name (spec §1.5)
  std::string_view source_folder;  // under kernels/versions/
  std::string_view cpp_namespace;  // inside flashscope::
  // Head counts a step with a compile-time GMEM row stride is instantiated for (step 16:
  // stride = d_head · heads); empty = any head count.
  std::vector<int> static_head_counts;
};

const std::vector<StepInfo>& steps();
const StepInfo& step_info(int step);  // throws std::out_of_range naming the valid range
// The step's own descriptor; throws std::out_of_range naming the valid range.
const StepDescriptor& step_descriptor(int step);

// The configs a step is measured with in the progression (both dtypes where the seed listed
// FP16): steps 1–7 their progression entry (§5.1); steps 8–16 the seed's A100 and RTX 3090 picks
// (§4.0); the Hopper steps their progression config (hopper-track.md §2); each followed by the
// picks measured by flashscope on Hopper GPUs, where recorded. Each step's descriptor declares
// them.
struct StepPicks {
  std::optional<KernelConfig> progression;   // steps 1–7 and the Hopper track
  std::optional<KernelConfig> seed_a100;     // steps 8–16
  std::optional<KernelConfig> seed_rtx3090;  // steps 8–16
  std::optional<KernelConfig> hopper;        // measured on an H200, where recorded
  std::optional<KernelConfig> hopper_h100;   // measured on an H100, where recorded
  // The progression config at each other head dimension the step supports (steps 22+).
  std::vector<KernelConfig> progression_at_other_d_heads;
  // Configs measured for what a feature costs (StepPickTexts::variants).
  std::vector<KernelConfig> variants;

  // Every config above that is set, in this order (duplicates kept).
  std::vector<KernelConfig> all() const;
};
StepPicks step_picks(int step);

// The config a step is shown with when one config stands for the step (FP16 form).
KernelConfig headline_config(int step);
// The same at head dimension `d_head`: headline_config(step) at its own d_head, else the step's
// progression config at `d_head`. Throws std::invalid_argument naming the step's head dimensions
// and the steps that support `d_head` when the step has none there.
KernelConfig headline_config(int step, int d_head);

// Every step number kernels/versions/steps.hpp lists, in order.
std::vector<int> step_numbers();
// The steps of `problem`'s pass whose descriptors run its value of `axis` (d_head 64, the causal
// mask, grouped K/V heads, …), in order; for Axis::pass, the steps of that pass.
std::vector<int> steps_running(Axis axis, const Problem& problem);
// The steps whose descriptor sets `.writes_lse`.
std::vector<int> steps_writing_lse();
// A plain problem (fp16, B 1, N 1024, 16 heads) of `pass` at `d_head`, for asking which steps run
// a head dimension.
Problem problem_at_d_head(int d_head, Pass pass = Pass::forward);
// Why step `step` cannot run `problem` by its descriptor's axes, naming the steps that can: "step
// 22 has no causal mask; causal attention runs on steps 23, 24, 25 (their
// kernels/versions/*/step.hpp declare it)"; nullopt when it runs every axis' value (the kernel's
// own limits are launch_refusal's).
std::optional<std::string> step_refusal_message(int step, const Problem& problem);
// "step 22", "steps 22, 23", "steps 1-15, 18-26" (three or more consecutive steps as a range),
// or "no step" for messages.
std::string step_list_text(const std::vector<int>& steps);
// "d_head 128 on steps 1-22; 64 on step 22; ..." for help texts, from the descriptors.
std::string d_head_support_text();

// ---- Sets of spec §5 (FP16 unless the set itself varies the dtype) ---------------------------

std::vector<KernelConfig> progression();           // 7, in step order
std::vector<KernelConfig> extended_progression();  // 56, outer loop over the 7 entries
std::vector<KernelConfig> tune_candidates();       // 256, product order of §5.2

// The first §5.3 rule that rejects `c` ("rule 4: B_r = 64, B_c = 32 and a resident Q ..."), or
// nullopt when the config is in the auto-tune set.
std::optional<std::string> tune_rejection(const KernelConfig& c);
std::vector<KernelConfig> tune_set();    // 80, product order (BF16 block first)
std::vector<KernelConfig> build_list();  // the seed's shipped list: the tune set, sorted

// Selection keys of §5.4: "prog…" (7), "prog…all…" (56), "all" (80), "tune" (80),
// "B_r,B_c" (tune configs with that shape). Throws std::invalid_argument otherwise.
std::vector<KernelConfig> select(std::string_view key);
std::string selection_keys_help();

// ---- The Hopper track's tune spaces (hopper-track.md §2) ---------------------------------------

// B_r × B_c × stages (× consumer_regs from step 19) for a Hopper step, both dtypes, BF16 first.
std::vector<KernelConfig> hopper_tune_candidates(int step);
// The first filter rule that drops `c` from step `step`'s tune set ("rule H2: ..."), or nullopt.
std::optional<std::string> hopper_tune_rejection(int step, const KernelConfig& c);
std::vector<KernelConfig> hopper_tune_set(int step);

// A selection key as step `step` reads it: select(key) for steps 1–16; for a Hopper step, "tune",
// "all" and "prog_all" yield its tune set and "B_r,B_c" the tune configs of that shape; for a
// backward step (no tune space yet) every valid key yields its picks in each of its dtypes.
std::vector<KernelConfig> select_for_step(std::string_view key, int step);

// ---- What the build instantiates ---------------------------------------------------------

enum class BuildSet {
  ci,    // every step once per dtype: its progression config or seed A100 pick (steps 22+: at
         // each head dimension they support)
  prog,  // every step's picks (StepPicks) in FP16 and BF16
  tune,  // prog plus the tune configs of the tuned steps (default 7 on): 80 for steps 7–16, the
         // step's Hopper tune set for a Hopper step
  all,   // tune plus the extended progression (both dtypes) for every step
};
std::optional<BuildSet> build_set_from_string(std::string_view name);
std::string_view build_set_name(BuildSet set);

struct Instantiation {
  int step;
  KernelConfig config;
  constexpr auto operator<=>(const Instantiation&) const = default;
};

struct SkippedInstantiation {
  Instantiation instantiation;
  std::string reason;  // a known-bad combination of spec §7 for that step
};

struct BuildPlan {
  std::vector<Instantiation> instantiations;  // sorted by (step, config), no duplicates
  std::vector<SkippedInstantiation> skipped;
};

// The steps whose descriptor tunes them by default: those the seed re-tuned (spec §5.6), 7 and
// every own-tree step after it, and the Hopper
// track's steps.
std::vector<int> default_tune_steps();

// `step_filter` empty = every step. `tune_steps` (sets tune and all): the steps that get their
// tune configs; empty = default_tune_steps().
BuildPlan build_plan(BuildSet set, const std::vector<int>& step_filter = {},
                     const std::vector<int>& tune_steps = {});

KernelConfig with_dtype(KernelConfig c, DType dtype);

// The config `step` launches `problem` with when `config` (a config of the step in the problem's
// dtype and d_head) stands for it: the step's own per-problem choice
// (StepDescriptor::problem_config, step 32) where it makes one, else `config`.
KernelConfig config_for_problem(int step, const KernelConfig& config, const Problem& problem);

// A step as a person writes it: "7", "B1" (or "b1"), or a backward step's number "101"; nullopt
// when the text names no step of this build.
std::optional<int> parse_step(std::string_view text);

// Parses "1-21", "7,16", "1-3,8", "B1-B6", "30,B5" into a sorted list of steps; throws
// std::invalid_argument naming the item and the steps there are.
std::vector<int> parse_step_list(std::string_view text);

}  // namespace flashscope::configs
