// Compile-time shape of one kernel instantiation of step 23 and the SMEM tile layout
// (spec §3.1, §4.2, §4.15; hopper-track.md §3, steps 17–21; docs/versions/23.md).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/mbarrier_pipeline.cuh"

namespace flashscope::v23 {

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

template <KernelConfig C>
struct Shape {
  // At class scope, so the host-only constexpr config helpers need no relaxed-constexpr flag.
  static_assert(is_statically_valid(C), "invalid KernelConfig (see static_config_violation)");
  static_assert(is_hopper_config(C), "step 23 runs Hopper configs (stages_N)");
  static_assert(producer_warpgroups(C) == 1 && C.consumer_regs != 0,
                "step 23 has a producer warpgroup and reallocates registers (regs_N)");
  static_assert(consumer_warpgroups(C) == 2, "ping-pong alternates exactly two consumers");
  static constexpr int kStages = C.stages;

  using Element = typename ElementOf<C.dtype>::type;

  static constexpr int kDHead = C.d_head;
  static constexpr int kThreads = 32 * C.n_warps;
  static_assert(kDHead % 64 == 0, "SMEM tiles are d_head / 64 sub-tiles of 64 columns");

  // Warpgroup 0 is the producer: one of its threads issues every TMA copy. Consumer warpgroup c
  // (warpgroup c + 1) owns 64 query rows, the M of every wgmma; inside it warp w % 4 holds rows
  // 16·(w % 4) .. +15 of each accumulator, so consumer warp v (warp v + 4) owns rows [16v, 16v +
  // 16).
  static constexpr int kConsumerWarpgroups = consumer_warpgroups(C);
  static constexpr int kConsumerWarps = kConsumerWarpgroups * kWarpgroupWarps;
  static_assert(kConsumerWarpgroups * kWarpgroupRows == C.B_r, "B_r must be 64 rows per consumer");
  static constexpr int kWarpQueryRows = 16;
  // Registers per thread after setmaxnreg: the consumers take what the producer gives back.
  static constexpr int kConsumerRegisters = C.consumer_regs;
  static constexpr int kProducerRegisters = producer_regs(C);

  // A thread's share of the warpgroup's accumulators, in the mma.sync m16n8 fragment layout that
  // wgmma's D registers share: S = Q·Kᵀ is (64 × B_c), O = P·V is (64 × d).
  static constexpr int kMTiles = 1;
  static constexpr int kScoreNTiles = C.B_c / 8;
  static constexpr int kOutputNTiles = kDHead / 8;
  static constexpr int kQKSlices = kDHead / 16;  // 16-wide k-steps of Q·Kᵀ (one wgmma each)
  static constexpr int kPVSlices = C.B_c / 16;   // 16-key k-steps of P·V (one wgmma each)

  // Element offsets from the 1024-byte aligned base: the Q tile, the O tile (a tile's O leaves
  // from its own buffer while the producer already loads the next tile's Q), then kStages K
  // tiles, then kStages V tiles, then the mbarriers: Q's one-slot ring, then the K and the V ring.
  static constexpr int kQTileOffset = 0;
  static constexpr int kOTileOffset = C.B_r * kDHead;
  static constexpr int kKVTileElements = C.B_c * kDHead;
  static constexpr int kKTileOffset = 2 * C.B_r * kDHead;
  static constexpr int kVTileOffset = kKTileOffset + kStages * kKVTileElements;
  static constexpr int kBarrierOffsetBytes = (kVTileOffset + kStages * kKVTileElements) * 2;
  static constexpr int kKRingOffsetBytes =
      kBarrierOffsetBytes + pipeline::MbarrierPipeline<1>::kBarrierBytes;
  static constexpr int kVRingOffsetBytes =
      kKRingOffsetBytes + pipeline::MbarrierPipeline<kStages>::kBarrierBytes;
  static constexpr int kBarrierBytes =
      kVRingOffsetBytes + pipeline::MbarrierPipeline<kStages>::kBarrierBytes - kBarrierOffsetBytes;
  static_assert(kBarrierBytes <= kHopperBarrierBytes, "the rings' barriers outgrow their space");
  // Dynamic SMEM of a launch: the tiles, the barriers and the slack that aligns the base.
  static constexpr int kSmemBytes = smem_bytes(C) + C.B_r * kDHead * kElementBytes;
  static_assert(kSmemBytes <= kHopperMaxSmemBytes,
                "step 23's Q + O + stages x (K + V) tiles exceed the 227 KB a block may opt in to");
  // Every tile and every 64-column sub-tile starts on a 128-byte-swizzle boundary (8 rows).
  static_assert(C.B_r % 8 == 0 && C.B_c % 8 == 0);

  // Bytes one TMA transaction set delivers: a whole Q tile, or one K or V tile.
  static constexpr int kQTileBytes = C.B_r * kDHead * 2;
  static constexpr int kKVTileBytes = kKVTileElements * 2;

  // exp(x / sqrt(d)) = exp2(x · log2(e) / sqrt(d)): the softmax folds both factors into one FFMA.
  static constexpr float kSoftmaxScaleLog2 =
      static_cast<float>(1.4426950408889634 / constexpr_sqrt(kDHead));
};

// Every SMEM tile of kRows rows is stored as d_head / 64 independent sub-tiles of kRows x 64
// elements (spec §4.15), sub-tile h starting at element h·kRows·64: a row of a sub-tile is 128
// bytes and its eight 16-byte chunks are swizzled by the row's low three bits. On a 1024-byte
// aligned base this is exactly the 128-byte swizzled layout wgmma reads through a descriptor
// (wgmma_descriptor.hpp), so from step 17 the swizzle is no longer optional.
inline constexpr int kSubTileColumns = 64;
inline constexpr int kSubTileRowBytes = kSubTileColumns * kElementBytes;  // 128

// Element offset of (row, col) inside one sub-tile (col < 64). The row's low three bits are
// XOR-ed into the 16-byte chunk index, so whole chunks move and the position inside a chunk
// (col % 8) is kept. Only per-thread base addresses are computed with it.
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

// The constant-stride form of the swizzle for 8-column fragments (spec §4.11), used by the O
// stores: fragment f selects sub-tile f / 8 and sets logical chunk bits 0-2 from its own bits
// 0-2, each XOR-ed with the same row bit, so a thread needs three signed steps.
struct FragmentSteps {
  int bit2;  // elements added when the fragment index has bit 2 set: ±32
  int bit1;  // ... bit 1 set: ±16
  int bit0;  // ... bit 0 set: ±8
};

template <KernelConfig C>
__device__ __forceinline__ FragmentSteps fragment_steps(int row) {
  return {(row & 4) ? -32 : 32, (row & 2) ? -16 : 16, (row & 1) ? -8 : 8};
}

// Element offset of 8-column fragment `fragment` from the same position in fragment 0, in a
// tile of kRows rows.
template <int kRows>
__device__ __forceinline__ int fragment_offset(const FragmentSteps& steps, int fragment) {
  return fragment / 8 * kRows * kSubTileColumns + ((fragment & 4) ? steps.bit2 : 0) +
         ((fragment & 2) ? steps.bit1 : 0) + ((fragment & 1) ? steps.bit0 : 0);
}

}  // namespace flashscope::v23
