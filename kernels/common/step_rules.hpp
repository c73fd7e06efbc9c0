// The known-bad combinations of spec §7 and hopper-track.md §3 that several steps share, one
// function per way a kernel copies its tiles and organizes its warps. A step's descriptor
// (kernels/versions/vNN/step.hpp) names the rule set its code needs in `.rules`; a step whose
// code adds a constraint declares its own function there. Each function sees only configs of its
// step's track that pass static_config_violation (launch_validation.cpp checks those first).
#pragma once

#include <optional>
#include <string>

#include "config.hpp"

namespace flashscope::step_rules {

// Steps 1–7 (spec §7.1): K and V are copied per warp, B_c / n_warps rows each, in 8-row patches
// (4 rows x 2 column halves per instruction); fewer rows than that leaves K/V unloaded.
inline std::optional<std::string> per_warp_copies(int /*step*/, const KernelConfig& c) {
  if (c.B_c / 8 < c.n_warps)
    return "steps 1–7 copy K/V per warp and need B_c / 8 >= n_warps; B_c = " +
           std::to_string(c.B_c) + " with " + std::to_string(c.n_warps) +
           " warps would leave K and V unloaded (spec §7.1)";
  return std::nullopt;
}

// Steps 8–16 copy CTA-cooperatively in patches of (threads / 8) rows, and each patch must hold
// whole 8-row swizzle periods so the per-thread swizzle stays a compile-time step.
inline std::optional<std::string> cta_cooperative_copies(int /*step*/, const KernelConfig& c) {
  if (c.n_warps % 2 != 0)
    return "steps 8–16 copy in patches of 4 * n_warps rows, which must be a multiple of 8 (the "
           "swizzle period); n_warps = " +
           std::to_string(c.n_warps) + " is odd";
  if (c.B_c % (4 * c.n_warps) != 0 || c.B_r % (4 * c.n_warps) != 0)
    return "steps 8–16 copy blocks in patches of 32 * n_warps / 8 rows; B_r = " +
           std::to_string(c.B_r) + " and B_c = " + std::to_string(c.B_c) +
           " must both be multiples of " + std::to_string(4 * c.n_warps);
  return std::nullopt;
}

namespace detail {

inline std::optional<std::string> no_producer_warpgroup(int step, const KernelConfig& c) {
  if (producer_warpgroups(c) != 0)
    return "step " + std::to_string(step) +
           " has no producer warpgroup: n_warps must be 4 x B_r / 64 = " +
           std::to_string(4 * consumer_warpgroups(c)) + ", not " + std::to_string(c.n_warps);
  return std::nullopt;
}

inline std::optional<std::string> no_register_reallocation(int step, const KernelConfig& c) {
  if (c.consumer_regs != 0)
    return "step " + std::to_string(step) +
           " does not reallocate registers (setmaxnreg comes with the producer "
           "warpgroup of step 19): consumer_regs must be 0";
  return std::nullopt;
}

}  // namespace detail

// Step 17: wgmma warpgroups only, K and V copied with cp.async (step 16's CTA-cooperative
// patches) into one buffer each.
inline std::optional<std::string> warpgroups_with_cp_async(int step, const KernelConfig& c) {
  if (auto reason = detail::no_producer_warpgroup(step, c)) return reason;
  if (c.stages != 1)
    return "step " + std::to_string(step) +
           " copies K and V with cp.async into one buffer each: stages must be 1, not " +
           std::to_string(c.stages);
  if (c.B_r % (4 * c.n_warps) != 0 || c.B_c % (4 * c.n_warps) != 0)
    return "step " + std::to_string(step) + " copies blocks in patches of 32 * n_warps / 8 rows; " +
           "B_r = " + std::to_string(c.B_r) + " and B_c = " + std::to_string(c.B_c) +
           " must both be multiples of " + std::to_string(4 * c.n_warps);
  return detail::no_register_reallocation(step, c);
}

// Step 18: wgmma warpgroups only, K and V loaded by TMA through a `stages`-deep mbarrier
// pipeline that every consumer thread drives.
inline std::optional<std::string> warpgroups_with_tma(int step, const KernelConfig& c) {
  if (auto reason = detail::no_producer_warpgroup(step, c)) return reason;
  return detail::no_register_reallocation(step, c);
}

// Steps 19+: one producer warpgroup issuing TMA loads into a circular buffer of `stages` K/V
// slots, two consumer warpgroups, registers moved to the consumers with setmaxnreg.
inline std::optional<std::string> warp_specialized(int step, const KernelConfig& c) {
  const std::string name = "step " + std::to_string(step);
  if (consumer_warpgroups(c) != 2)
    return name + " runs one producer and two consumer warpgroups: B_r must be 128, not " +
           std::to_string(c.B_r);
  if (producer_warpgroups(c) != 1)
    return name + " needs the producer warpgroup: n_warps must be 12, not " +
           std::to_string(c.n_warps);
  if (c.consumer_regs == 0)
    return name + " reallocates registers with setmaxnreg: consumer_regs (regs_N) must be set";
  if (c.stages < 2)
    return name + " overlaps loads with compute through a circular buffer: stages must be >= 2";
  return std::nullopt;
}

// Steps 22+: steps 19–21's rules, and the shared memory of the separate O tile
// (docs/versions/22.md): O is stored from a tile of its own so the next tile's Q can load while
// O leaves, one B_r x d_head tile more than smem_bytes() counts.
inline std::optional<std::string> persistent_with_own_O_tile(int step, const KernelConfig& c) {
  if (auto reason = warp_specialized(step, c)) return reason;
  const int bytes = smem_bytes(c) + c.B_r * c.d_head * element_bytes(output_dtype(c.dtype));
  if (bytes > kHopperMaxSmemBytes)
    return "step " + std::to_string(step) +
           " keeps Q, O and stages x (K + V) tiles in shared memory: " + std::to_string(bytes) +
           " bytes at B_c = " + std::to_string(c.B_c) +
           " and stages = " + std::to_string(c.stages) +
           " exceed the 232448 bytes (227 KB) a block may opt in to";
  return std::nullopt;
}

// ---- The backward track (docs/spec/backward-track.md) ------------------------------------------

// A backward step's name as users see it: step 101 is "B1", 102 "B2", ...
inline std::string backward_step_name(int step) {
  return "B" + std::to_string(step - 100);
}

// Steps B1 and B2 (backward-track.md §4): the warps work in pairs on 32-key groups of the KV
// block; a warp holds dK and dV of its keys x d_head / 2 columns (d_head fp32 registers a thread)
// and the transposed scores Sᵀ and dPᵀ of its keys x B_r / 2 queries (B_r registers). The
// kernels' layout.cuh asserts the same at compile time.
inline std::optional<std::string> backward_warp_pairs(int step, const KernelConfig& c) {
  const std::string name = "step " + backward_step_name(step);
  if (c.d_head == 256)
    return name +
           " keeps dK and dV of a warp's 32 keys x d_head / 2 columns in fp32 registers: 256 "
           "registers a thread at d_head = 256, more than the 255 a thread can have (d_head 64 "
           "and 128 run)";
  if (c.d_head != 64 && c.d_head != 128)
    return name + " runs d_head 64 and 128, not " + std::to_string(c.d_head);
  if (c.n_warps % 2 != 0 || c.B_c != 16 * c.n_warps)
    return name + " gives each pair of warps 32 keys of the KV block: B_c must be 16 x n_warps = " +
           std::to_string(16 * c.n_warps) + ", not " + std::to_string(c.B_c) +
           (c.n_warps % 2 != 0 ? " (and n_warps even)" : "");
  if (c.B_r != 64)
    return name + " works on 64-query blocks: B_r must be 64, not " + std::to_string(c.B_r) +
           " (a warp holds Sᵀ and dPᵀ of its 32 keys x B_r / 2 queries beside dK and dV; at B_r = "
           "128 step B2 spilled and ran 20 % slower at d_head 64)";
  if (c.Q_mma_load_K_fragments != 0 || c.K_mma_load_K_fragments != 0 ||
      c.V_mma_load_K_fragments != 0 || c.optimized_softmax)
    return name + " loads whole fragments and has no softmax option: load_0_0_0, no opt_softmax";
  if (!c.async_copy) return name + " copies every tile with cp.async: async must be set";
  return std::nullopt;
}

// Step B1: unswizzled tiles, one query block in shared memory at a time.
inline std::optional<std::string> backward_b1(int step, const KernelConfig& c) {
  if (auto reason = backward_warp_pairs(step, c)) return reason;
  if (c.swizzled || c.eager_load_blocks || c.mma_double_buffer_loads)
    return "step " + backward_step_name(step) +
           " keeps its tiles unswizzled and single-buffered: swizzled, eager and buffer must be "
           "unset (step B2 has them)";
  return std::nullopt;
}

// Step B2: B1's layout with swizzled tiles, double-buffered query blocks and double-buffered
// fragment loads.
inline std::optional<std::string> backward_b2(int step, const KernelConfig& c) {
  if (auto reason = backward_warp_pairs(step, c)) return reason;
  if (!c.swizzled || !c.eager_load_blocks || !c.mma_double_buffer_loads)
    return "step " + backward_step_name(step) +
           " swizzles its tiles and double-buffers the query blocks and the fragment loads: "
           "swizzled, eager and buffer must be set (step B1 has none of them)";
  return std::nullopt;
}

// Step B3 (backward-track.md §4): two warpgroups of 64 keys each (the M of every wgmma), one
// query block of 64 rows at a time in a ring of `stages` buffers; a warpgroup holds dK and dV of
// its 64 keys x d_head in fp32 registers (d_head registers a thread) beside Sᵀ and dPᵀ (B_r). The
// kernel's layout.cuh asserts the same at compile time.
inline std::optional<std::string> backward_b3(int step, const KernelConfig& c) {
  const std::string name = "step " + backward_step_name(step);
  if (c.d_head == 256)
    return name +
           " keeps dK and dV of a warpgroup's 64 keys x d_head in fp32 registers: 256 registers a "
           "thread at d_head = 256, more than the 255 a thread can have (d_head 64 and 128 run)";
  if (c.d_head != 64 && c.d_head != 128)
    return name + " runs d_head 64 and 128, not " + std::to_string(c.d_head);
  if (c.n_warps != 8 || c.B_c != 128)
    return name + " gives each of two warpgroups 64 keys of the KV block: B_c must be 128 and " +
           "n_warps 8, not " + std::to_string(c.B_c) + " and " + std::to_string(c.n_warps);
  if (c.B_r != 64)
    return name + " works on 64-query blocks: B_r must be 64, not " + std::to_string(c.B_r) +
           " (a warpgroup holds Sᵀ and dPᵀ of its 64 keys x B_r queries beside dK and dV)";
  if (c.stages < 2 || c.stages > 3)
    return name + " keeps 2 or 3 query blocks in flight: stages must be 2 or 3, not " +
           std::to_string(c.stages);
  if (c.consumer_regs != 0)
    return name + " has no producer warpgroup to take registers from: no regs_N";
  return std::nullopt;
}

// Step B4 (backward-track.md §4): B3's two consumer warpgroups of 64 keys and a producer
// warpgroup (n_warps 12), registers moved from the producer to the consumers with setmaxnreg
// (regs_N the producer can pay for), and each consumer's B_r x 64 fp32 dQ block staged in shared
// memory beside B3's tiles. The kernel's layout.cuh asserts the same at compile time.
inline std::optional<std::string> backward_b4(int step, const KernelConfig& c) {
  const std::string name = "step " + backward_step_name(step);
  if (c.d_head == 256)
    return name +
           " keeps dK and dV of a warpgroup's 64 keys x d_head in fp32 registers: 256 registers a "
           "thread at d_head = 256, more than the 255 a thread can have (d_head 64 and 128 run)";
  if (c.d_head != 64 && c.d_head != 128)
    return name + " runs d_head 64 and 128, not " + std::to_string(c.d_head);
  if (c.n_warps != 12 || c.B_c != 128)
    return name + " has a producer warpgroup and two consumer warpgroups of 64 keys: B_c must be " +
           "128 and n_warps 12, not " + std::to_string(c.B_c) + " and " + std::to_string(c.n_warps);
  if (c.B_r != 64)
    return name + " works on 64-query blocks: B_r must be 64, not " + std::to_string(c.B_r) +
           " (a warpgroup holds Sᵀ and dPᵀ of its 64 keys x B_r queries beside dK and dV)";
  if (c.stages < 2 || c.stages > 3)
    return name + " keeps 2 or 3 query blocks in flight: stages must be 2 or 3, not " +
           std::to_string(c.stages);
  if (c.consumer_regs == 0 || producer_regs(c, Pass::backward) < 24)
    return name + " moves registers from its producer warpgroup to the consumers: regs_N with N " +
           "from 168 to 240 (the producer keeps 168 - 2 x (N - 168), at least 24)";
  return std::nullopt;
}

}  // namespace flashscope::step_rules
