// Compile-time shape of one instantiation of backward step B6, its warpgroup roles, its
// shared-memory tiles, its order of work units and its workspace (backward-track.md §4, B5, B6).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "kernels/common/backward_args.hpp"
#include "kernels/common/config.hpp"
#include "kernels/versions/b06/unit_order.hpp"

namespace flashscope::b06 {

template <DType kDType>
struct ElementOf;
template <>
struct ElementOf<DType::FP16> {
  using type = __half;
};
template <>
struct ElementOf<DType::BF16> {
  using type = __nv_bfloat16;
};

// Newton iteration, so the softmax scale 1/sqrt(d_head) is an immediate in the kernel.
constexpr double constexpr_sqrt(double x) {
  double root = x > 1.0 ? x : 1.0;
  for (int iteration = 0; iteration < 64; ++iteration)
    root = 0.5 * (root + x / root);
  return root;
}

// What the backward's warpgroup layout needs of a config, beyond static_config_violation; "" when
// it fits. The step's validation rules (step_rules::backward_b4, which B5 keeps) repeat these with
// the config's
// values.
//  - A producer warpgroup that issues the copies and two consumer warpgroups of 64 keys each (the
//    M of every wgmma): B_c = 128, n_warps = 12.
//  - The consumers take the registers the producer gives back (setmaxnreg): regs_N with N the
//    consumers' count, paid for by the producer (producer_regs, at least 24 a thread).
//  - A warpgroup keeps dK and dV of its 64 keys x d_head in fp32 registers (d_head registers a
//    thread) beside the transposed scores Sᵀ and dPᵀ of its 64 keys x B_r queries (B_r
//    registers): d_head = 256 would need 256 for dK and dV alone.
//  - The query blocks have 64 rows (B_r = 64), one 128-byte swizzle row of dSᵀ.
//  - `stages` buffers of a query block (Q, dO, L, D): 2 or 3.
constexpr const char* backward_layout_violation(const KernelConfig& c) {
  if (!is_hopper_config(c)) return "step B6 needs a Hopper config (stages >= 1): wgmma and TMA";
  if (c.d_head != 64 && c.d_head != 128)
    return "d_head must be 64 or 128: a warpgroup keeps dK and dV of 64 keys x d_head in fp32 "
           "registers (256 registers a thread at d_head = 256)";
  if (c.n_warps != 12 || c.B_c != 128)
    return "B_c must be 128 and n_warps 12: a producer warpgroup and two consumer warpgroups of 64 "
           "keys (the M of a wgmma)";
  if (c.B_r != 64) return "B_r must be 64: Sᵀ and dPᵀ of 64 keys x B_r queries beside dK and dV";
  if (c.stages < 2 || c.stages > 3) return "stages must be 2 or 3 (query blocks in flight)";
  if (c.consumer_regs == 0 || producer_regs(c, Pass::backward) < 24)
    return "step B6 reallocates registers: regs_N the producer warpgroup can pay for";
  return "";
}

// Every SMEM tile of kRows rows is stored as (columns / 64) sub-tiles of kRows x 64 elements,
// sub-tile h starting at element h·kRows·64: a row of a sub-tile is 128 bytes, one 128-byte
// swizzle row. On a 1024-byte aligned base this is the layout a TMA box with
// CU_TENSOR_MAP_SWIZZLE_128B writes and wgmma reads through a descriptor (wgmma_descriptor.hpp),
// the same swizzle B2 computed by hand.
inline constexpr int kSubTileColumns = 64;
inline constexpr int kSubTileRowBytes = kSubTileColumns * kElementBytes;  // 128

template <KernelConfig C>
struct Shape {
  static_assert(backward_layout_violation(C)[0] == '\0',
                "invalid backward config (see backward_layout_violation)");

  using Element = typename ElementOf<C.dtype>::type;

  static constexpr int kDHead = C.d_head;
  static constexpr int kThreads = 32 * C.n_warps;
  static constexpr int kStages = C.stages;

  // ---- Warpgroup roles (backward-track.md §4, B4 and B5) ----------------------------------
  // Warpgroup 0 is the producer: one of its threads issues every copy. Consumer warpgroup w
  // (warpgroup w + 1) owns keys [64w, 64w + 64) of the KV block: the M of Sᵀ = K·Qᵀ,
  // dPᵀ = V·dOᵀ, dV += Pᵀ·dO and dK += dSᵀ·Q. Its warp v holds rows 16v .. 16v + 15 of each
  // accumulator. For dQ = dS·K (M = the 64 queries, N = 64 columns of dQ) the consumers split the
  // work in two 64-column halves: at d_head 128 consumer w takes dQ's columns [64w, 64w + 64) over
  // all 128 keys (each dQ element added once per CTA); at d_head 64 there is one 64-column group,
  // and consumer w takes it over its own 64 keys (the two consumers add to the same elements).
  static constexpr int kWarpgroups = consumer_warpgroups(C, Pass::backward);  // the consumers
  static constexpr int kConsumerWarps = kWarpgroups * kWarpgroupWarps;
  static constexpr int kConsumerThreads = 32 * kConsumerWarps;
  // Registers per thread after setmaxnreg: the consumers take what the producer gives back.
  static constexpr int kConsumerRegisters = C.consumer_regs;
  static constexpr int kProducerRegisters = producer_regs(C, Pass::backward);
  static constexpr int kGroupKeys = kWarpgroupRows;   // 64
  static constexpr int kScoreNTiles = C.B_r / 8;      // 8-column blocks of Sᵀ and dPᵀ
  static constexpr int kGradientNTiles = kDHead / 8;  // ... of dV and dK
  static constexpr int kDSlices = kDHead / 16;        // k-steps of Sᵀ and dPᵀ
  static constexpr int kQuerySlices = C.B_r / 16;     // k-steps of dV and dK
  static constexpr bool kDqSplitsColumns = kDHead / kWarpgroups >= kSubTileColumns;
  static constexpr int kDqColumns = kDqSplitsColumns ? kDHead / kWarpgroups : kDHead;  // 64
  static constexpr int kDqKeys = kDqSplitsColumns ? C.B_c : kGroupKeys;
  static constexpr int kDqNTiles = kDqColumns / 8;
  static constexpr int kDqSlices = kDqKeys / 16;
  // B6: the reduction steps of dQ over one consumer's 64 keys (its own dSᵀ rows, or the other's).
  static constexpr int kGroupDqSlices = kGroupKeys / 16;
  static_assert(kDqColumns == kSubTileColumns, "a warpgroup's dQ columns are one sub-tile");

  // ---- Shared memory ---------------------------------------------------------------------
  // Byte offsets from the 1024-byte aligned base: K and V (B_c x d_head, loaded once; later dK
  // and dV), kStages stages of Q and dO (B_r x d_head each), two buffers of dSᵀ (B_c x B_r, a row
  // per key: the M-major A of dQ = dS·K), each consumer's fp32 dQ block (B_r x 64, staged for
  // the bulk reduce-add, in the accumulator's layout: dq_accumulator_offset), kStages stages of
  // the fp32 vectors L·log2(e) and D (B_r each), then the mbarriers: the query pipeline's full and
  // empty barriers, K and V's full and empty barriers (a CTA now loads a K and V block per work
  // unit, and the next unit's may only land once the last one's dK and dV have left through the
  // same tiles), then the work unit the producer hands the consumers (an int).
  static constexpr int kKVTileBytes = C.B_c * kDHead * kElementBytes;
  static constexpr int kQueryTileBytes = C.B_r * kDHead * kElementBytes;
  static constexpr int kdSTileBytes = C.B_c * C.B_r * kElementBytes;
  static constexpr int kKTile = 0;
  static constexpr int kVTile = kKTile + kKVTileBytes;
  static constexpr int kQTile = kVTile + kKVTileBytes;  // stage s adds s x kQueryTileBytes
  static constexpr int kdOTile = kQTile + kStages * kQueryTileBytes;
  static constexpr int kdSTile = kdOTile + kStages * kQueryTileBytes;  // buffer b: b x kdSTileBytes
  static constexpr int kDqStageBytes = C.B_r * kSubTileColumns * 4;
  static constexpr int kDqStage = kdSTile + 2 * kdSTileBytes;  // consumer w: w x kDqStageBytes
  static constexpr int kLseVector = kDqStage + kWarpgroups * kDqStageBytes;  // s: s x kVectorBytes
  static constexpr int kRowDVector = kLseVector + kStages * C.B_r * 4;
  static constexpr int kVectorBytes = C.B_r * 4;
  static constexpr int kBarriers = kRowDVector + kStages * kVectorBytes;
  static constexpr int kBarrierBytes = (2 * kStages + 2) * 8;
  static constexpr int kUnitSlot = kBarriers + kBarrierBytes;
  static constexpr int kSmemBytes = kHopperSmemAlignment + kUnitSlot + 8;
  static_assert(kSmemBytes <= kHopperMaxSmemBytes, "B6's tiles exceed the 227 KB of an SM");

  // ---- The deterministic option (KernelConfig::deterministic) -----------------------------
  // dQ's 64-column groups (2 at d_head 128, 1 at 64) and the bulk reduce-adds one CTA makes into
  // one group of a query block: 1 at d_head 128 (consumer w adds group w), 2 at 64 (both consumers
  // add the one group, consumer 0 first).
  static constexpr int kDqGroups = kDHead / kSubTileColumns;
  static constexpr int kAddsPerGroup = kDqSplitsColumns ? 1 : kWarpgroups;
  // Bytes one query block's copies complete on its full barrier.
  static constexpr std::uint32_t kQueryBlockBytes = 2 * kQueryTileBytes + 2 * kVectorBytes;

  // P = exp(s / sqrt(d) - L) = exp2(s · log2(e) / sqrt(d) - L · log2(e)): the preprocess stores
  // L · log2(e), and each probability is one FFMA and one ex2.
  static constexpr float kScale = static_cast<float>(1.0 / constexpr_sqrt(kDHead));
  static constexpr float kScaleLog2 =
      static_cast<float>(1.4426950408889634 / constexpr_sqrt(kDHead));
};

// Element offset of (row, col) inside one sub-tile (col < 64): the row's low three bits XOR-ed
// into the 16-byte chunk index (the 128-byte swizzle). Only per-thread base addresses use it.
template <KernelConfig C>
__device__ __forceinline__ int sub_tile_offset(int row, int col) {
  return row * kSubTileColumns + (col ^ ((row & 7) << 3));
}

// Element offset of (row, col) in a tile of kRows rows.
template <KernelConfig C, int kRows>
__device__ __forceinline__ int smem_offset(int row, int col) {
  return col / kSubTileColumns * kRows * kSubTileColumns +
         sub_tile_offset<C>(row, col % kSubTileColumns);
}

// The constant-stride form of the swizzle for 8-column fragments (the accumulator stores):
// fragment f selects sub-tile f / 8 and sets logical chunk bits 0-2 from its own bits 0-2, each
// XOR-ed with the same row bit, so a thread needs three signed steps.
struct FragmentSteps {
  int bit2;  // elements added when the fragment index has bit 2 set: ±32
  int bit1;  // ... bit 1 set: ±16
  int bit0;  // ... bit 0 set: ±8
};

template <KernelConfig C>
__device__ __forceinline__ FragmentSteps fragment_steps(int row) {
  return {(row & 4) ? -32 : 32, (row & 2) ? -16 : 16, (row & 1) ? -8 : 8};
}

template <int kRows>
__device__ __forceinline__ int fragment_offset(const FragmentSteps& steps, int fragment) {
  return fragment / 8 * kRows * kSubTileColumns + ((fragment & 4) ? steps.bit2 : 0) +
         ((fragment & 2) ? steps.bit1 : 0) + ((fragment & 1) ? steps.bit0 : 0);
}

// ---- Workspace (BackwardArgs::workspace) ---------------------------------------------------

// Element offset of dQ's (row, column) in one sequence's fp32 accumulator of seq_len rows. The
// accumulator is the step's own scratch, laid out for the bulk reduce-add: a CTA's contribution
// to one query block is one consumer's 64 columns of B_r rows, so the columns come in 64-wide
// groups, each group [seq_len][64] (a block of it is one contiguous range: one bulk operation),
// and inside a row the 8-column chunks are XOR-ed with row % 8, so the staging stores of a warp
// (8 rows x the same 8 columns) spread over the shared-memory banks. A chunk stays 8 contiguous
// columns, so the pre- and postprocess still move 16-byte vectors.
__host__ __device__ constexpr std::int64_t dq_accumulator_offset(int seq_len, int row, int column) {
  return static_cast<std::int64_t>(column / kSubTileColumns) * seq_len * kSubTileColumns +
         static_cast<std::int64_t>(row) * kSubTileColumns +
         ((column % kSubTileColumns) ^ ((row & 7) << 3));
}

// The fp32 dQ accumulator [batch, heads] of seq_len x d_head in dq_accumulator_offset's layout,
// then D = rowsum(dO ∘ O) and L · log2(e), each [batch, heads, padded_len] with padded_len =
// seq_len rounded up to B_r (the preprocess writes 0 in the padding rows, so the main kernel copies
// whole blocks of them), then the counter that hands out the work units, then (deterministic
// configs only) one semaphore per (sample, head, dQ column group, query block): how many bulk
// reduce-adds that block of that group has received. The preprocess zeroes the counter and the
// semaphores.
struct WorkspaceLayout {
  float* dq_accumulator;
  float* row_d;
  float* row_lse2;
  unsigned* unit_counter;
  unsigned* dq_semaphores;  // null unless deterministic
  int padded_len;
};

__host__ __device__ constexpr std::size_t align_256(std::size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

template <KernelConfig C>
struct Workspace {
  __host__ __device__ static int padded_len(const BackwardArgs& args) {
    return (args.seq_len + C.B_r - 1) / C.B_r * C.B_r;
  }
  __host__ __device__ static std::size_t accumulator_bytes(const BackwardArgs& args) {
    return align_256(static_cast<std::size_t>(args.batch) * args.n_heads * args.seq_len * C.d_head *
                     sizeof(float));
  }
  __host__ __device__ static std::size_t vector_bytes(const BackwardArgs& args) {
    return align_256(static_cast<std::size_t>(args.batch) * args.n_heads * padded_len(args) *
                     sizeof(float));
  }
  __host__ __device__ static int q_blocks(const BackwardArgs& args) {
    return padded_len(args) / C.B_r;
  }
  __host__ __device__ static std::size_t semaphore_bytes(const BackwardArgs& args) {
    if (!C.deterministic) return 0;
    return align_256(static_cast<std::size_t>(args.batch) * args.n_heads * Shape<C>::kDqGroups *
                     q_blocks(args) * sizeof(unsigned));
  }
  __host__ __device__ static std::size_t bytes(const BackwardArgs& args) {
    return accumulator_bytes(args) + 2 * vector_bytes(args) + 256 + semaphore_bytes(args);
  }
  __host__ __device__ static WorkspaceLayout layout(const BackwardArgs& args) {
    char* const base = static_cast<char*>(args.workspace);
    char* const counter = base + accumulator_bytes(args) + 2 * vector_bytes(args);
    return {reinterpret_cast<float*>(base),
            reinterpret_cast<float*>(base + accumulator_bytes(args)),
            reinterpret_cast<float*>(base + accumulator_bytes(args) + vector_bytes(args)),
            reinterpret_cast<unsigned*>(counter),
            C.deterministic ? reinterpret_cast<unsigned*>(counter + 256) : nullptr,
            padded_len(args)};
  }
  // The semaphore of dQ column group `group` of query block `q_block` of sequence `sequence`.
  __host__ __device__ static std::int64_t semaphore_index(const BackwardArgs& args,
                                                          std::int64_t sequence, int group,
                                                          int q_block) {
    return (sequence * Shape<C>::kDqGroups + group) * q_blocks(args) + q_block;
  }
};

}  // namespace flashscope::b06
