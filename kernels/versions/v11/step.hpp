// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp), listed in kernels/versions/steps.hpp. The kernel code
// next to it is frozen; docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

inline constexpr StepDescriptor kStep11{
    .number = 11,
    .title = "Encoded swizzling RF->SMEM",
    .track = Track::ampere,
    .source_folder = "v11",
    .cpp_namespace = "v11",
    .dtypes = {DType::FP16, DType::BF16},
    .d_heads = {128},
    .static_head_counts = {},
    // spec §4.0: the seed's A100 and RTX 3090 picks; the H200 pick is the fastest tune config at
    // N = 4096, B = 16, H = 16, fp16 (CUDA events, median; the same or within 1 % in bf16).
    .picks = {.seed_a100 = "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles",
              .seed_rtx3090 =
                  "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+opt_softmax",
              .hopper_h200 =
                  "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+opt_softmax"},
    .tuning = {.by_default = true},
    .rules = step_rules::cta_cooperative_copies,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
