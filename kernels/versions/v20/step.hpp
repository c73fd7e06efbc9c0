// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp), listed in kernels/versions/steps.hpp. The kernel code
// next to it is frozen; docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

inline constexpr StepDescriptor kStep20{
    .number = 20,
    .title = "Ping-pong scheduling of the consumer warpgroups",
    .track = Track::hopper,
    .source_folder = "v20",
    .cpp_namespace = "v20",
    .dtypes = {DType::FP16, DType::BF16},
    .d_heads = {128},
    .static_head_counts = {},
    // hopper-track.md §2: the config the step was designed around; the picks are the fastest of
    // its tune set at N = 4096, B = 16, H = 16, fp16 (CUDA events, median) in the 2026-11-23
    // Hopper-track runs at f968a064645b (results/h200/MANIFEST.md, results/h100/MANIFEST.md).
    .picks = {.progression = "(FP16, 128, 128, 128, 12): stages_2+regs_240",
              .hopper_h200 = "(FP16, 128, 128, 128, 12): stages_2+regs_224",
              .hopper_h100 = "(FP16, 128, 128, 128, 12): stages_2+regs_240"},
    .tuning = {.by_default = true,
               .B_r = {128},
               .B_c = {64, 128},
               .stages = {2, 3},
               .consumer_regs = {224, 240},
               .producer_warpgroups = 1},
    .rules = step_rules::warp_specialized,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
