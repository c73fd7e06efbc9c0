// Compile-time shape of one kernel instantiation of step 26 and the SMEM tile layout
// (spec §3.1, §4.2, §4.15; hopper-track.md §3, steps 17–21; docs/versions/25.md, 26.md). Step 26
// packs the query heads of a group into the Q tile (packing.cuh); the layout is step 25's.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/mbarrier_pipeline.cuh"

namespace flashscope::v35 {

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
// Step 28's FP8 path (fp8_layout.cuh has its tiles): e4m3 codes as bytes.
template <>
struct ElementOf<DType::E4M3> {
  using type = std::uint8_t;
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
  static_assert(is_hopper_config(C), "step 26 runs Hopper configs (stages_N)");
  static_assert(producer_warpgroups(C) == 1 && C.consumer_regs != 0,
                "step 26 has a producer warpgroup and reallocates registers (regs_N)");
  // Step 29: the turns go round two or three consumers (kernel.cuh), B_r = 128 or 192.
  static_assert(consumer_warpgroups(C) == 2 || consumer_warpgroups(C) == 3,
                "the GEMM turns go round two or three consumers");
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

  // Element offsets from the 1024-byte aligned base: the Q tile, then kStages K tiles, then
  // kStages V tiles, then the mbarriers: Q's one-slot ring, then the K and the V ring. Step 22's
  // O tile is gone: O leaves from the registers (store_O_to_global), and its B_r x d_head
  // elements are what a deeper or wider K/V ring may use.
  static constexpr int kQTileOffset = 0;
  static constexpr int kKVTileElements = C.B_c * kDHead;
  static constexpr int kKTileOffset = C.B_r * kDHead;
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
  static constexpr int kSmemBytes = smem_bytes(C);
  static_assert(kSmemBytes <= kHopperMaxSmemBytes,
                "step 26's Q + stages x (K + V) tiles exceed the 227 KB a block may opt in to");
  // Every tile and every 64-column sub-tile starts on a 128-byte-swizzle boundary (8 rows).
  static_assert(C.B_r % 8 == 0 && C.B_c % 8 == 0);

  // Bytes one TMA transaction set delivers: a whole Q tile (g = 1; a packed tile's are
  // packed_tile_bytes, gmem_smem_copy.cuh), or one K or V tile.
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
// (wgmma_descriptor.hpp), so from step 17 the swizzle is no longer optional. From step 25 only
// the TMA unit and wgmma address the tiles: no thread writes one, so no thread computes a
// swizzled offset.
inline constexpr int kSubTileColumns = 64;
inline constexpr int kSubTileRowBytes = kSubTileColumns * kElementBytes;  // 128

}  // namespace flashscope::v35
