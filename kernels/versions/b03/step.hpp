// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp). The kernel code next to it is frozen;
// docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

// Backward step B3 (docs/spec/backward-track.md §4, docs/versions/B3.md): step B2's algorithm on
// the Hopper tensor cores: the five GEMMs on wgmma (P and dS as register A operands, the
// transposed operands through the descriptors' transpose bits), the tiles by TMA through an
// mbarrier pipeline. sm_90a only.
inline constexpr StepDescriptor kStepB3{
    .number = 103,
    .title = "Hopper GEMMs: wgmma for the five GEMMs, TMA and an mbarrier pipeline",
    .track = Track::hopper,
    .pass = Pass::backward,
    .source_folder = "b03",
    .cpp_namespace = "b03",
    .dtypes = {DType::FP16, DType::BF16},
    // d_head 256 does not fit: dK and dV alone would take 256 registers a thread
    // (step_rules::backward_b3).
    .d_heads = {64, 128},
    .causal = true,
    // Rows past the end are zero-filled by TMA, masked out of P and not written (the TMA store
    // drops them; backward-track.md §4).
    .partial_blocks = true,
    .static_head_counts = {},
    // Two warpgroups of 64 keys: B_c = 128 keys a CTA, B_r = 64 queries an inner step; stages is
    // the number of query-block buffers (Q, dO, L, D), two of them copied ahead.
    .picks = {.progression = "(FP16, 128, 64, 128, 8): stages_3",
              .progression_at_other_d_heads = {"(FP16, 64, 64, 128, 8): stages_3"}},
    .tuning = {},
    .rules = step_rules::backward_b3,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
