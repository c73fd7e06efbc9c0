// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp). The kernel code next to it is frozen;
// docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

// Backward step B1 (docs/spec/backward-track.md §4, docs/versions/B1.md): FlashAttention-2's
// backward on Ampere instructions. Numbered 101 so the backward progression (B1, B2, ...) never
// shares a number with the forward's.
inline constexpr StepDescriptor kStepB1{
    .number = 101,
    .title = "FlashAttention-2's backward on Ampere instructions",
    .track = Track::ampere,
    .pass = Pass::backward,
    .source_folder = "b01",
    .cpp_namespace = "b01",
    .dtypes = {DType::FP16, DType::BF16},
    // d_head 256 does not fit: dK and dV alone would take 256 registers a thread
    // (step_rules::backward_warp_pairs).
    .d_heads = {64, 128},
    .causal = true,
    // Rows past the end are zero-filled, masked out of P and not written (backward-track.md §4).
    .partial_blocks = true,
    .static_head_counts = {},
    // Eight warps in four key pairs: B_c = 16 x n_warps = 128 keys a CTA, B_r = 64 queries an
    // inner step (docs/versions/B1.md says why 128 keys: half the dQ reductions of 64).
    .picks = {.progression = "(FP16, 128, 64, 128, 8): async+load_0_0_0_tiles",
              .progression_at_other_d_heads = {"(FP16, 64, 64, 128, 8): async+load_0_0_0_tiles"}},
    .tuning = {},
    .rules = step_rules::backward_b1,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
