// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp). The kernel code next to it is frozen;
// docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

// Backward step B6 (docs/spec/backward-track.md §4, docs/versions/B6.md): step B5's kernel with the
// two consumer warpgroups out of lockstep: no barrier of both consumers in a query block's loop,
// each consumer meets its own warpgroup, and at d_head 128 takes the other consumer's dSᵀ rows
// through a one-way hand-over (the writer arrives, the reader waits) just before the dQ steps
// that read them. sm_90a only.
inline constexpr StepDescriptor kStepB6{
    .number = 106,
    .title = "Consumers out of lockstep: own-warpgroup barriers, a one-way dS hand-over",
    .track = Track::hopper,
    .pass = Pass::backward,
    .source_folder = "b06",
    .cpp_namespace = "b06",
    .dtypes = {DType::FP16, DType::BF16},
    // d_head 256 does not fit: dK and dV alone would take 256 registers a thread
    // (step_rules::backward_b4, which B5 and B6 keep).
    .d_heads = {64, 128},
    .causal = true,
    // Rows past the end are zero-filled by TMA, masked out of P and not written (the TMA store
    // drops them; backward-track.md §4).
    .partial_blocks = true,
    // `deterministic` in a config's features: dQ's adds in a fixed order, through a semaphore per
    // query block (kernel.cuh).
    .deterministic_dq = true,
    .static_head_counts = {},
    // B5's warpgroups, tiles, register split and stages (B6 changes the consumers' barriers
    // only). The deterministic variant is built and measured beside the progression config for
    // its cost; it never stands for the step.
    .picks = {.progression = "(FP16, 128, 64, 128, 12): stages_3+regs_240",
              .progression_at_other_d_heads = {"(FP16, 64, 64, 128, 12): stages_3+regs_240"},
              .variants = {"(FP16, 128, 64, 128, 12): stages_3+regs_240+deterministic",
                           "(FP16, 64, 64, 128, 12): stages_3+regs_240+deterministic"}},
    .tuning = {},
    .rules = step_rules::backward_b4,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
