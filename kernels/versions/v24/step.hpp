// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp), listed in kernels/versions/steps.hpp. The kernel code
// next to it is frozen; docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

inline constexpr StepDescriptor kStep24{
    .number = 24,
    .title = "Scheduling for the causal triangle: equal-cost tile pairs",
    .track = Track::hopper,
    .source_folder = "v24",
    .cpp_namespace = "v24",
    .dtypes = {DType::FP16, DType::BF16},
    // The kernel is generic in d_head (64-column sub-tiles, one TMA box per sub-tile, a wgmma of
    // N = d_head for P·V); docs/versions/22.md, "Head dimensions", says what changes per d_head.
    .d_heads = {64, 128, 256},
    // Step 23's mask; the causal launch pairs heavy and light query blocks.
    .causal = true,
    .static_head_counts = {},
    // Step 23's progression config. The per-GPU picks are the tune configs with the highest
    // harmonic mean of % cuDNN over N = 512…16384 on the causal problem, fp16 (B = 16 … 4,
    // H = 16; results/h100/tune-24-causal.csv, results/h200/tune-24-causal.csv): a mean over N,
    // not N = 4096 alone, because the triangle's tail weighs differently at each N. B_c = 128
    // with two stages leads B_c = 64 by 5-10 points of that mean on both GPUs; the register
    // split moves it by under half a point.
    .picks = {.progression = "(FP16, 128, 128, 128, 12): stages_2+regs_240",
              .hopper_h200 = "(FP16, 128, 128, 128, 12): stages_2+regs_224",
              .hopper_h100 = "(FP16, 128, 128, 128, 12): stages_2+regs_240",
              // Step 22's, for the reasons docs/versions/22.md gives.
              .progression_at_other_d_heads = {"(FP16, 64, 128, 128, 12): stages_4+regs_240",
                                               "(FP16, 256, 128, 32, 12): stages_2+regs_240"}},
    .tuning = {.by_default = true,
               .B_r = {128},
               .B_c = {64, 128},
               .stages = {2, 3, 4},  // the O tile leaves room for 4 at B_c = 64 only
               .consumer_regs = {224, 240},
               .producer_warpgroups = 1,
               // At d_head = 256 a B_c = 64 stage is 64 KB: rule H1 (the shared memory above)
               // drops it and stages 4 of B_c = 32, leaving B_c = 32 with 2 or 3 stages. At
               // d_head = 64 the axes above fit as they are.
               .by_d_head = {{{.d_head = 256, .B_c = {32, 64}, .stages = {}}}}},
    .rules = step_rules::persistent_with_own_O_tile,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
