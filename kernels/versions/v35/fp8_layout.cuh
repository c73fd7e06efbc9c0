// Compile-time shape and SMEM layout of the FP8 path of step 28 (docs/versions/28.md,
// docs/spec/fp8-track.md §4.1). Every tile row is one 128-byte swizzle row, 128 e4m3 elements: the
// Q, K and V tiles are ceil(d_head / 128) sub-tiles of 128 columns (d_head = 64 fills half a row,
// the TMA box's other half arrives as zeros and no wgmma step reads it), written by TMA in the
// 128-byte swizzle as the 16-bit tiles are. Each stage also holds Vᵀ: d_head rows of B_c <= 128
// keys, one swizzled 128-byte row each, written by the producer warpgroup's transpose
// (fp8_transpose.cuh), because 8-bit wgmma reads its B operand K-major only.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/mbarrier_pipeline.cuh"
#include "kernels/versions/v35/layout.cuh"
#include "kernels/versions/v35/step.hpp"

namespace flashscope::v35 {

template <KernelConfig C>
struct Fp8Shape {
  static_assert(C.dtype == DType::E4M3, "the FP8 path runs e4m3 configs");
  static_assert(is_hopper_config(C) && producer_warpgroups(C) == 1 && C.consumer_regs != 0,
                "step 28 has a producer warpgroup and reallocates registers (regs_N)");
  // Step 29: the turns go round two or three consumers, as on the 16-bit path.
  static_assert(consumer_warpgroups(C) == 2 || consumer_warpgroups(C) == 3,
                "the GEMM turns go round two or three consumers");
  static_assert(C.B_c % 32 == 0 && C.B_c <= 128,
                "Vᵀ keeps B_c keys in one 128-byte row, read in 32-key steps");
  static_assert(C.d_head % 64 == 0, "d_head is 64, 128 or 256");

  static constexpr int kStages = C.stages;
  static constexpr int kDHead = C.d_head;
  static constexpr int kThreads = 32 * C.n_warps;
  static constexpr int kConsumerWarps = consumer_warpgroups(C) * kWarpgroupWarps;
  static constexpr int kWarpQueryRows = 16;
  // Step 33: where the config leaves the producer fewer than 32 registers (regs_240 with two
  // consumers: 24, which spills around the transpose and cannot hold two of its items in flight,
  // fp8_transpose.cuh), each consumer thread gives 8 back and the producer keeps 40: 128 · 40 +
  // 256 · 232 = 384 · 168, the registers the CTA starts with. regs_160 with three consumers leaves
  // the producer 32 and stays. The 16-bit kernel (layout.cuh) keeps the config's split.
  static constexpr KernelConfig kRegisterSplit = [] {
    KernelConfig split = C;
    if (producer_regs(C) < 32) split.consumer_regs -= 8;
    return split;
  }();
  static constexpr int kConsumerRegisters = kRegisterSplit.consumer_regs;
  static constexpr int kProducerRegisters = producer_regs(kRegisterSplit);
  static_assert(kProducerRegisters >= 32 && 32 * kWarpgroupWarps * kProducerRegisters +
                                                    kConsumerWarps * 32 * kConsumerRegisters <=
                                                entry_registers(kThreads) * kThreads,
                "setmaxnreg.inc takes only what the producer gave back");

  static constexpr int kRowBytes = versions::v35::kFp8RowBytes;  // 128 elements
  static constexpr int kSubTiles = versions::v35::fp8_sub_tiles(C);

  // Accumulators as in the 16-bit path: S is 64 x B_c, O is 64 x d_head per consumer.
  static constexpr int kMTiles = 1;
  static constexpr int kScoreNTiles = C.B_c / 8;
  static constexpr int kOutputNTiles = kDHead / 8;
  static constexpr int kQKSteps = kDHead / 32;  // 32-wide k-steps of Q·Kᵀ
  static constexpr int kPVSteps = C.B_c / 32;   // 32-key k-steps of P·V

  // Byte offsets from the 1024-byte aligned base: Q, the K ring, the V ring, the Vᵀ ring, then the
  // barriers: Q's ring, K's, V's (TMA-full, transpose-empty) and Vᵀ's (transpose-full,
  // consumer-empty).
  static constexpr int kQTileBytes = C.B_r * kSubTiles * kRowBytes;
  static constexpr int kKVTileBytes = C.B_c * kSubTiles * kRowBytes;
  static constexpr int kVtTileBytes = kDHead * kRowBytes;
  static constexpr int kQTileOffset = 0;
  static constexpr int kKTileOffset = kQTileBytes;
  static constexpr int kVTileOffset = kKTileOffset + kStages * kKVTileBytes;
  static constexpr int kVtTileOffset = kVTileOffset + kStages * kKVTileBytes;
  static constexpr int kBarrierOffsetBytes = kVtTileOffset + kStages * kVtTileBytes;
  static constexpr int kKRingOffsetBytes =
      kBarrierOffsetBytes + pipeline::MbarrierPipeline<1>::kBarrierBytes;
  static constexpr int kVRingOffsetBytes =
      kKRingOffsetBytes + pipeline::MbarrierPipeline<kStages>::kBarrierBytes;
  static constexpr int kVtRingOffsetBytes =
      kVRingOffsetBytes + pipeline::MbarrierPipeline<kStages>::kBarrierBytes;
  static constexpr int kBarrierBytes =
      kVtRingOffsetBytes + pipeline::MbarrierPipeline<kStages>::kBarrierBytes - kBarrierOffsetBytes;
  static_assert(kBarrierBytes <= kHopperBarrierBytes, "the rings' barriers outgrow their space");
  static constexpr int kSmemBytes = versions::v35::fp8_smem_bytes(C);
  static_assert(kSmemBytes == kHopperSmemAlignment + kBarrierOffsetBytes + kHopperBarrierBytes);
  static_assert(kSmemBytes <= kHopperMaxSmemBytes,
                "step 28's e4m3 Q + stages x (K + V + Vᵀ) tiles exceed the 227 KB a block may opt "
                "in to");

  // log2(e) / sqrt(d): the per-(sample, head) descales of Q and K multiply it at run time.
  static constexpr float kSoftmaxScaleLog2 =
      static_cast<float>(1.4426950408889634 / constexpr_sqrt(kDHead));
  // P is scaled by 2^8 before its e4m3 rounding (fp8-track.md §4.1): exp2 gets +8.
  static constexpr float kProbabilityScaleLog2 = 8.0f;
};

// The byte offset of the 16-byte chunk holding byte `column` of row `row` in a 128-byte swizzled
// sub-tile: chunk index XOR row mod 8 (the layout TMA writes and wgmma reads).
__device__ __forceinline__ std::uint32_t swizzled_128(int row, int column) {
  return static_cast<std::uint32_t>(row * 128 + ((((column >> 4) ^ row) & 7) << 4) + (column & 15));
}

}  // namespace flashscope::v35
