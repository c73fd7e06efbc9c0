// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp), listed in kernels/versions/steps.hpp. The kernel code
// next to it is frozen; docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

inline constexpr StepDescriptor kStep26{
    .number = 26,
    .title = "O stored from registers: its shared memory goes to the K/V ring",
    .track = Track::hopper,
    .source_folder = "v26",
    .cpp_namespace = "v26",
    .dtypes = {DType::FP16, DType::BF16},
    // Generic in d_head as steps 22-24 are; what changes is what fits (docs/versions/25.md).
    .d_heads = {64, 128, 256},
    // Step 23's mask and step 24's paired schedule.
    .causal = true,
    .static_head_counts = {},
    // Step 24's progression config at 128 and 64. At 256 the freed O tile buys B_c = 64 with two
    // stages, the configuration this step exists for. The per-GPU picks (d_head 128) are the tune
    // configs with the highest harmonic mean of % cuDNN over N = 512…16384, fp16, in the runs of
    // results/h100/d-heads-25.csv and results/h200/d-heads-25.csv: the third B_c = 128 stage the
    // O tile's room allows wins on the H100 (103.9 %, two stages 102.3 %), not on the H200
    // (two stages 103.2 %, three 102.7 %).
    .picks = {.progression = "(FP16, 128, 128, 128, 12): stages_2+regs_240",
              .hopper_h200 = "(FP16, 128, 128, 128, 12): stages_2+regs_240",
              .hopper_h100 = "(FP16, 128, 128, 128, 12): stages_3+regs_224",
              .progression_at_other_d_heads = {"(FP16, 64, 128, 128, 12): stages_4+regs_240",
                                               "(FP16, 256, 128, 64, 12): stages_2+regs_240"}},
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
    // Steps 19-21's rules: without the O tile, smem_bytes() (Q + stages x (K + V)) is the whole
    // footprint again.
    .rules = step_rules::warp_specialized,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
