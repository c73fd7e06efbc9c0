// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp). The kernel code next to it is frozen;
// docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

// Backward step B4 (docs/spec/backward-track.md §4, docs/versions/B4.md): step B3's kernel with
// warp specialization (a producer warpgroup issues every copy, two consumer warpgroups compute,
// registers moved to them with setmaxnreg) and dQ added by the copy engine (each consumer's dQ
// block staged in shared memory and added with one bulk reduce-add instead of per-element `red`s).
// sm_90a only.
inline constexpr StepDescriptor kStepB4{
    .number = 104,
    .title = "Warp specialization, and dQ added by a bulk reduce-add on the copy engine",
    .track = Track::hopper,
    .pass = Pass::backward,
    .source_folder = "b04",
    .cpp_namespace = "b04",
    .dtypes = {DType::FP16, DType::BF16},
    // d_head 256 does not fit: dK and dV alone would take 256 registers a thread
    // (step_rules::backward_b4).
    .d_heads = {64, 128},
    .causal = true,
    // Rows past the end are zero-filled by TMA, masked out of P and not written (the TMA store
    // drops them; backward-track.md §4).
    .partial_blocks = true,
    .static_head_counts = {},
    // A producer warpgroup and two consumer warpgroups of 64 keys: B_c = 128 keys a CTA, B_r = 64
    // queries an inner step; stages is the number of query-block buffers (Q, dO, L, D), as in B3.
    // regs_240: 384 threads start with 168 registers; the consumers grow to 240 (B3's kernel used
    // up to 232) and the producer pays with 168 - 2 x 72 = 24.
    .picks = {.progression = "(FP16, 128, 64, 128, 12): stages_3+regs_240",
              .progression_at_other_d_heads = {"(FP16, 64, 64, 128, 12): stages_3+regs_240"}},
    .tuning = {},
    .rules = step_rules::backward_b4,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
