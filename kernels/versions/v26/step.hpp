// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp), listed in kernels/versions/steps.hpp. The kernel code
// next to it is frozen; docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

inline constexpr StepDescriptor kStep26{
    .number = 26,
    .title = "Independent partial maxima and sums in the softmax",
    .track = Track::hopper,
    .source_folder = "v26",
    .cpp_namespace = "v26",
    .dtypes = {DType::FP16, DType::BF16},
    // Generic in d_head as steps 22-25 are (docs/versions/26.md).
    .d_heads = {64, 128, 256},
    // Step 23's mask and step 24's paired schedule.
    .causal = true,
    .static_head_counts = {},
    // Step 25's configs and picks; step 26 changes no resource a config sizes.
    .picks = {.progression = "(FP16, 128, 128, 128, 12): stages_2+regs_240",
              .hopper_h200 = "(FP16, 128, 128, 128, 12): stages_2+regs_240",
              .hopper_h100 = "(FP16, 128, 128, 128, 12): stages_3+regs_224",
              .progression_at_other_d_heads = {"(FP16, 64, 128, 128, 12): stages_4+regs_240",
                                               "(FP16, 256, 128, 64, 12): stages_2+regs_240"}},
    .tuning = {.by_default = true,
               .B_r = {128},
               .B_c = {64, 128},
               // Step 25's tune space.
               .stages = {2, 3, 4},
               .consumer_regs = {224, 240},
               .producer_warpgroups = 1,
               .by_d_head = {{{.d_head = 256, .B_c = {32, 64}, .stages = {2, 3}}}}},
    // Step 25's rules: smem_bytes() (Q + stages x (K + V)) is the whole footprint.
    .rules = step_rules::warp_specialized,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
