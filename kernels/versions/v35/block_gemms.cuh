// The two per-KV-block GEMMs of a warpgroup on the Hopper tensor cores (hopper-track.md §3, steps
// 17–21): S = Q·Kᵀ with both operands read from SMEM through wgmma descriptors, and O += P·V with P
// from registers and V from SMEM. Each GEMM is one wgmma group: a 64 × N × 16 wgmma per 16-wide
// step of the reduction, issued back to back, committed, and waited for before the result is
// read. No ldmatrix, no register staging of K or V, no per-thread fragment addressing. K and V
// come from one of the pipeline's `stages` buffers: the descriptors of stage 0 plus a stage
// offset. From step 20 issuing a GEMM and waiting for it are separate calls, so a warpgroup can
// hand the tensor cores to the other one between the two.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/common/ptx_hopper.cuh"
#include "kernels/versions/v35/fragments.cuh"
#include "kernels/versions/v35/layout.cuh"

namespace flashscope::v35 {

// The SMEM descriptors of a warpgroup's three operands at reduction step 0, made once per thread.
// All tiles are 64-column sub-tiles in the 128-byte swizzled layout (layout.cuh).
struct OperandDescriptors {
  std::uint64_t Q;  // this warpgroup's 64 rows of the Q tile: A, K-major
  std::uint64_t K;  // K tile of stage 0: B of Q·Kᵀ, K-major (a key row is contiguous along d)
  std::uint64_t V;  // V tile of stage 0: B of P·V, MN-major (a key row is contiguous along d = N)
};

template <KernelConfig C>
__device__ __forceinline__ OperandDescriptors make_operand_descriptors(std::uint32_t Q_tile,
                                                                       std::uint32_t K_tile,
                                                                       std::uint32_t V_tile,
                                                                       int warpgroup) {
  constexpr std::uint32_t kUnusedLeading = 16;  // K-major swizzled: ignored, "assumed 1"
  constexpr std::uint32_t kGroupStride = wgmma::kSwizzle128AtomBytes;  // 8 rows of 128 bytes
  // MN-major V: the N = d columns come in 64-column groups, one per sub-tile of B_c rows.
  constexpr std::uint32_t kVColumnGroupStride = C.B_c * kSubTileRowBytes;
  const std::uint32_t Q_rows = Q_tile + warpgroup * kWarpgroupRows * kSubTileRowBytes;
  return {wgmma::make_descriptor(Q_rows, kUnusedLeading, kGroupStride),
          wgmma::make_descriptor(K_tile, kUnusedLeading, kGroupStride),
          wgmma::make_descriptor(V_tile, kVColumnGroupStride, kGroupStride)};
}

// Byte offset of 16-column reduction step `slice` in a K-major tile of kRows rows: the 64-column
// sub-tile slice / 4, then 32 bytes per step inside its swizzled 128-byte rows (the hardware
// applies the swizzle to the address bits, so a step inside the atom is a plain offset).
template <int kRows>
__device__ __forceinline__ constexpr std::uint32_t k_major_step_offset(int slice) {
  return slice / 4 * kRows * kSubTileRowBytes + slice % 4 * 32;
}

// Waits until at most kPending of this warpgroup's committed GEMMs are in flight; the
// accumulators of the completed ones may then be read.
template <int kPending, int kNTiles>
__device__ __forceinline__ void wait_for_gemms(float (&accumulators)[kNTiles][4]) {
  ptx::fence_operands(accumulators);
  ptx::wgmma_wait_group<kPending>();
  ptx::fence_operands(accumulators);
}

// Issues S = Q·Kᵀ for this warpgroup's 64 query rows against the K block in buffer `stage` as one
// committed group: d / 16 wgmmas, the first overwriting S (no zeroing needed). S may be read after
// wait_for_gemms.
template <KernelConfig C>
__device__ __forceinline__ void issue_scores(
    Accumulators<Shape<C>::kMTiles, Shape<C>::kScoreNTiles>& S,
    const OperandDescriptors& descriptors, int stage) {
  using Sh = Shape<C>;
  const std::uint64_t K = wgmma::advance_descriptor(descriptors.K, stage * Sh::kKVTileBytes);
  ptx::fence_operands(S[0]);
  ptx::wgmma_fence();
#pragma unroll
  for (int slice = 0; slice < Sh::kQKSlices; ++slice) {
    ptx::WgmmaOp<C.dtype, C.B_c>::template ss<0>(
        S[0], wgmma::advance_descriptor(descriptors.Q, k_major_step_offset<C.B_r>(slice)),
        wgmma::advance_descriptor(K, k_major_step_offset<C.B_c>(slice)), slice > 0);
  }
  ptx::wgmma_commit_group();
}

// Issues O += P·V for this warpgroup's rows against the V block in buffer `stage` as one committed
// group: B_c / 16 wgmmas with P's k-slice from registers and V read MN-major (the descriptor's
// transpose bit; V is never transposed in memory). Key step t starts 16 rows further down every
// sub-tile: 16 · 128 bytes. Neither O nor P may be touched before wait_for_gemms.
template <KernelConfig C>
__device__ __forceinline__ void issue_output(
    Accumulators<Shape<C>::kMTiles, Shape<C>::kOutputNTiles>& O,
    const AFragments<Shape<C>::kMTiles, Shape<C>::kPVSlices>& P,
    const OperandDescriptors& descriptors, int stage) {
  using Sh = Shape<C>;
  const std::uint64_t V = wgmma::advance_descriptor(descriptors.V, stage * Sh::kKVTileBytes);
  ptx::fence_operands(O[0]);
  ptx::wgmma_fence();
#pragma unroll
  for (int slice = 0; slice < Sh::kPVSlices; ++slice) {
    ptx::WgmmaOp<C.dtype, Sh::kDHead>::template rs<1>(
        O[0], P[0][slice], wgmma::advance_descriptor(V, slice * 16 * kSubTileRowBytes), true);
  }
  ptx::wgmma_commit_group();
}

}  // namespace flashscope::v35
