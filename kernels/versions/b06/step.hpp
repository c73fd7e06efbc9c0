// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp). The kernel code next to it is frozen;
// docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

// Backward step B6 (docs/spec/backward-track.md §4, docs/versions/B6.md): step B5's kernel with
// the two consumer warpgroups out of lockstep: each computes dQ over its own 64 keys and every
// column (B5 split d_head 128's columns between them, over both consumers' keys), so a query
// block's barrier is the consumer's own warpgroup's, not both consumers'. Two query stages at
// d_head 128 (the staged dQ block doubles). sm_90a only.
inline constexpr StepDescriptor kStepB6{
    .number = 106,
    .title = "Consumers out of lockstep: dQ over each consumer's own keys",
    .track = Track::hopper,
    .pass = Pass::backward,
    .source_folder = "b06",
    .cpp_namespace = "b06",
    .dtypes = {DType::FP16, DType::BF16},
    // d_head 256 does not fit: dK and dV alone would take 256 registers a thread
    // (step_rules::backward_b4, which B6 keeps).
    .d_heads = {64, 128},
    .causal = true,
    // Rows past the end are zero-filled by TMA, masked out of P and not written (the TMA store
    // drops them; backward-track.md §4).
    .partial_blocks = true,
    // `deterministic` in a config's features: dQ's adds in a fixed order, through a semaphore per
    // query block (kernel.cuh).
    .deterministic_dq = true,
    .static_head_counts = {},
    // B5's warpgroups, tiles and register split; at d_head 128 two query stages, as each
    // consumer's staged 64 x 128 fp32 dQ block takes the third one's shared memory (layout.cuh).
    // The deterministic variant is built and measured beside the progression config for its
    // cost; it never stands for the step.
    .picks = {.progression = "(FP16, 128, 64, 128, 12): stages_2+regs_240",
              .progression_at_other_d_heads = {"(FP16, 64, 64, 128, 12): stages_3+regs_240"},
              .variants = {"(FP16, 128, 64, 128, 12): stages_2+regs_240+deterministic",
                           "(FP16, 64, 64, 128, 12): stages_3+regs_240+deterministic"}},
    .tuning = {},
    .rules = step_rules::backward_b4,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
