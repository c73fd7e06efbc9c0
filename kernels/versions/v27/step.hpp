// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp), listed in kernels/versions/steps.hpp. The kernel code
// next to it is frozen; docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

// The step's own functions live in a namespace named after its folder, so that a copy of this
// folder (renamed as docs/adding-a-step.md says) declares its own and never collides with these.
namespace v27 {

// A packed tile holds floor(B_r / g) positions of a group's g query heads: a group of more than
// B_r heads would leave none (docs/versions/26.md).
inline std::optional<std::string> packs_whole_groups(int step, const KernelConfig& c,
                                                     const Problem& problem) {
  if (problem.group_size() <= c.B_r) return std::nullopt;
  return "step " + std::to_string(step) +
         " packs a group's query heads into one tile of B_r = " + std::to_string(c.B_r) +
         " rows; a group of " + std::to_string(problem.group_size()) + " heads (heads " +
         std::to_string(problem.heads) + " / heads_kv " + std::to_string(problem.heads_kv) +
         ") does not fit";
}

}  // namespace v27

inline constexpr StepDescriptor kStep27{
    .number = 27,
    .title = "Conditional rescaling of O: a warp skips the rescale while its row maxima hold",
    .track = Track::hopper,
    .source_folder = "v27",
    .cpp_namespace = "v27",
    .dtypes = {DType::FP16, DType::BF16},
    // Generic in d_head as steps 22-25 are (docs/versions/25.md, 26.md).
    .d_heads = {64, 128, 256},
    // Step 23's mask, against each packed row's own query position, and step 24's paired
    // schedule over the packed blocks.
    .causal = true,
    // Any n_kv_heads that divides n_heads, with groups of at most B_r query heads: the group's
    // heads are packed into one tile, which loads each K/V tile once (docs/versions/26.md).
    .grouped_kv = true,
    // The epilogue writes the row log-sum-exp when ForwardArgs::softmax_lse is set.
    .writes_lse = true,
    .static_head_counts = {},
    // Step 25's progression configs: packing changes neither the tiles nor their shared memory.
    // No per-GPU picks yet: they wait for a measured sweep of this step's tune set.
    .picks = {.progression = "(FP16, 128, 128, 128, 12): stages_2+regs_240",
              .progression_at_other_d_heads = {"(FP16, 64, 128, 128, 12): stages_4+regs_240",
                                               "(FP16, 256, 128, 64, 12): stages_2+regs_240"}},
    // Step 25's tune set: the packed Q tile is the B_r x d_head tile it always was.
    .tuning = {.by_default = true,
               .B_r = {128},
               .B_c = {64, 128},
               // Without the O tile B_c = 128 has room for 3 stages at d_head = 128, B_c = 64 for
               // 6 (4 is where step 22's tune set showed no further gain).
               .stages = {2, 3, 4},
               .consumer_regs = {224, 240},
               .producer_warpgroups = 1,
               // At d_head = 256 a B_c = 64 stage is 64 KB: two fit beside the 64 KB Q tile, and
               // B_c = 32 stays for comparison with step 24. B_c = 128 (128 KB a stage) does not
               // fit twice.
               .by_d_head = {{{.d_head = 256, .B_c = {32, 64}, .stages = {2, 3}}}}},
    // Step 25's rules: smem_bytes() (Q + stages x (K + V)) is the whole footprint, and packing
    // adds none (the idle rows of a packed Q tile are part of it).
    .rules = step_rules::warp_specialized,
    .problem_rules = v27::packs_whole_groups,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
