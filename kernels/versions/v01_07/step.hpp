// What the host knows about the steps in this folder: their descriptors
// (kernels/common/step_descriptor.hpp), listed in kernels/versions/steps.hpp. The kernel code
// next to it is frozen; docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

inline constexpr StepDescriptor kStep01{
    .number = 1,
    .title = "Base implementation",
    .track = Track::ampere,
    .source_folder = "v01_07",
    .cpp_namespace = "v01_07",
    .dtypes = {DType::FP16, DType::BF16},
    .d_heads = {128},
    .static_head_counts = {},
    // spec §5.1: the step's entry of the base progression.
    .picks = {.progression = "(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles"},
    .tuning = {.by_default = false},
    .rules = step_rules::per_warp_copies,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

inline constexpr StepDescriptor kStep02{
    .number = 2,
    .title = "Swizzling",
    .track = Track::ampere,
    .source_folder = "v01_07",
    .cpp_namespace = "v01_07",
    .dtypes = {DType::FP16, DType::BF16},
    .d_heads = {128},
    .static_head_counts = {},
    // spec §5.1: the step's entry of the base progression.
    .picks = {.progression = "(FP16, 128, 64, 64, 4): async+swizzled+load_0_0_0_tiles"},
    .tuning = {.by_default = false},
    .rules = step_rules::per_warp_copies,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

inline constexpr StepDescriptor kStep03{
    .number = 3,
    .title = "Eagerly loading K & V blocks",
    .track = Track::ampere,
    .source_folder = "v01_07",
    .cpp_namespace = "v01_07",
    .dtypes = {DType::FP16, DType::BF16},
    .d_heads = {128},
    .static_head_counts = {},
    // spec §5.1: the step's entry of the base progression.
    .picks = {.progression = "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_0_0_tiles"},
    .tuning = {.by_default = false},
    .rules = step_rules::per_warp_copies,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

inline constexpr StepDescriptor kStep04{
    .number = 4,
    .title = "Interleaving on-chip LD/ST with computation",
    .track = Track::ampere,
    .source_folder = "v01_07",
    .cpp_namespace = "v01_07",
    .dtypes = {DType::FP16, DType::BF16},
    .d_heads = {128},
    .static_head_counts = {},
    // spec §5.1: the step's entry of the base progression.
    .picks = {.progression = "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_2_2_2_tiles"},
    .tuning = {.by_default = false},
    .rules = step_rules::per_warp_copies,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

inline constexpr StepDescriptor kStep05{
    .number = 5,
    .title = "Double-buffering SMEM->RF loads",
    .track = Track::ampere,
    .source_folder = "v01_07",
    .cpp_namespace = "v01_07",
    .dtypes = {DType::FP16, DType::BF16},
    .d_heads = {128},
    .static_head_counts = {},
    // spec §5.1: the step's entry of the base progression.
    .picks = {.progression =
                  "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_2_2_2_tiles+buffer"},
    .tuning = {.by_default = false},
    .rules = step_rules::per_warp_copies,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

inline constexpr StepDescriptor kStep06{
    .number = 6,
    .title = "Improving FP32 throughput",
    .track = Track::ampere,
    .source_folder = "v01_07",
    .cpp_namespace = "v01_07",
    .dtypes = {DType::FP16, DType::BF16},
    .d_heads = {128},
    .static_head_counts = {},
    // spec §5.1: the step's entry of the base progression.
    .picks =
        {.progression =
             "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_2_2_2_tiles+buffer+opt_softmax"},
    .tuning = {.by_default = false},
    .rules = step_rules::per_warp_copies,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

inline constexpr StepDescriptor kStep07{
    .number = 7,
    .title = "Auto-tuning",
    .track = Track::ampere,
    .source_folder = "v01_07",
    .cpp_namespace = "v01_07",
    .dtypes = {DType::FP16, DType::BF16},
    .d_heads = {128},
    .static_head_counts = {},
    // spec §5.1: the step's entry of the base progression; the H200 pick measured as steps 8–16's
    // (it ties with 128 x 64 load_2_2_2+opt_softmax).
    .picks = {.progression =
                  "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_2_2_tiles+opt_softmax",
              .hopper_h200 =
                  "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_0_0_tiles+opt_softmax"},
    .tuning = {.by_default = true},
    .rules = step_rules::per_warp_copies,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
