// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp). The kernel code next to it is frozen;
// docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

// Backward step B5 (docs/spec/backward-track.md §4, docs/versions/B5.md): step B4's kernel on a
// persistent grid (one CTA an SM loops over the (KV block, head, sample) work units, taking the
// next from a global counter, the heaviest KV blocks first), and a deterministic option
// (`deterministic`: each query block's dQ contributions added in one fixed order). sm_90a only.
inline constexpr StepDescriptor kStepB5{
    .number = 105,
    .title = "Persistent grid, heaviest KV blocks first; deterministic dQ as an option",
    .track = Track::hopper,
    .pass = Pass::backward,
    .source_folder = "b05",
    .cpp_namespace = "b05",
    .dtypes = {DType::FP16, DType::BF16},
    // d_head 256 does not fit: dK and dV alone would take 256 registers a thread
    // (step_rules::backward_b4, which B5 keeps).
    .d_heads = {64, 128},
    .causal = true,
    // Rows past the end are zero-filled by TMA, masked out of P and not written (the TMA store
    // drops them; backward-track.md §4).
    .partial_blocks = true,
    // `deterministic` in a config's features: dQ's adds in a fixed order, through a semaphore per
    // query block (kernel.cuh).
    .deterministic_dq = true,
    .static_head_counts = {},
    // B4's warpgroups, tiles and register split (B5 changes the grid and the order of work, not
    // the CTA). The deterministic variant is built and measured beside the progression config for
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
