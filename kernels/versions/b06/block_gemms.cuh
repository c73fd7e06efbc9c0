// The five GEMMs of a query block on the Hopper tensor cores (backward-track.md §4, B3), each one
// committed group of 64 x N x 16 wgmmas issued back to back by a warpgroup:
//   Sᵀ  = K·Qᵀ    A = the warpgroup's 64 key rows of K (SMEM, K-major), B = Q (SMEM, K-major)
//   dPᵀ = V·dOᵀ   A = its 64 rows of V, B = dO (the same forms)
//   dV += Pᵀ·dO   A = P from registers (Sᵀ's accumulators, converted), B = dO MN-major
//   dK += dSᵀ·Q   A = dS from registers, B = Q MN-major
//   dQ  = dS·K    A = dSᵀ from SMEM read M-major, B = K MN-major
// The transposed reads are the descriptors' transpose bits: no tile is ever transposed in memory,
// and no thread loads a fragment. The accumulators of a group may be read only after
// wait_for_gemms says it completed.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/common/ptx_hopper.cuh"
#include "kernels/versions/b06/fragments.cuh"
#include "kernels/versions/b06/layout.cuh"

namespace flashscope::b06 {

// The SMEM descriptors of a warpgroup's operands at reduction step 0 (Q and dO of stage 0, dSᵀ of
// buffer 0), made once per thread. All tiles are 64-column sub-tiles in the 128-byte swizzled
// layout (layout.cuh).
struct OperandDescriptors {
  std::uint64_t K_rows;  // the warpgroup's 64 keys of K: A of Sᵀ, K-major
  std::uint64_t V_rows;  // ... of V: A of dPᵀ
  std::uint64_t Q;       // Q of stage 0: B of Sᵀ, K-major (a query row is contiguous along d)
  std::uint64_t dO;      // dO of stage 0: B of dPᵀ, K-major
  std::uint64_t Q_mn;    // Q of stage 0: B of dK, MN-major (N = d_head in 64-column groups)
  std::uint64_t dO_mn;   // dO of stage 0: B of dV, MN-major
  std::uint64_t dS_m;    // dSᵀ of buffer 0 from the warpgroup's first dQ key: A of dQ, M-major
  std::uint64_t K_mn;    // K from the same key, the warpgroup's dQ columns: B of dQ, MN-major
};

template <KernelConfig C>
__device__ __forceinline__ OperandDescriptors
make_operand_descriptors(std::uint32_t K_tile, std::uint32_t V_tile, std::uint32_t Q_tile,
                         std::uint32_t dO_tile, std::uint32_t dS_tile, int warpgroup) {
  using Sh = Shape<C>;
  constexpr std::uint32_t kUnusedLeading = 16;  // K-major swizzled: ignored, "assumed 1"
  constexpr std::uint32_t kGroupStride = wgmma::kSwizzle128AtomBytes;  // 8 rows of 128 bytes
  // MN-major: the MN dimension comes in 64-element groups, one per sub-tile of the tile's rows.
  constexpr std::uint32_t kQueryColumnGroups = C.B_r * kSubTileRowBytes;
  constexpr std::uint32_t kKeyColumnGroups = C.B_c * kSubTileRowBytes;
  const std::uint32_t group_rows = warpgroup * Sh::kGroupKeys * kSubTileRowBytes;
  // dQ: columns [64w, 64w + 64) over every key (sub-tile w of K), or all 64 columns over the
  // warpgroup's own keys (layout.cuh).
  const std::uint32_t dq_first_key = Sh::kDqSplitsColumns ? 0 : group_rows;
  const std::uint32_t dq_sub_tile = Sh::kDqSplitsColumns ? warpgroup * kKeyColumnGroups : 0;
  return {
      wgmma::make_descriptor(K_tile + group_rows, kUnusedLeading, kGroupStride),
      wgmma::make_descriptor(V_tile + group_rows, kUnusedLeading, kGroupStride),
      wgmma::make_descriptor(Q_tile, kUnusedLeading, kGroupStride),
      wgmma::make_descriptor(dO_tile, kUnusedLeading, kGroupStride),
      wgmma::make_descriptor(Q_tile, kQueryColumnGroups, kGroupStride),
      wgmma::make_descriptor(dO_tile, kQueryColumnGroups, kGroupStride),
      wgmma::make_descriptor(dS_tile + dq_first_key, kKeyColumnGroups, kGroupStride),
      wgmma::make_descriptor(K_tile + dq_sub_tile + dq_first_key, kKeyColumnGroups, kGroupStride)};
}

// Byte offset of 16-column reduction step `slice` in a K-major tile of kRows rows: the 64-column
// sub-tile slice / 4, then 32 bytes per step inside its swizzled 128-byte rows (the hardware
// applies the swizzle to the address bits, so a step inside the atom is a plain offset).
template <int kRows>
__device__ __forceinline__ constexpr std::uint32_t k_major_step_offset(int slice) {
  return slice / 4 * kRows * kSubTileRowBytes + slice % 4 * 32;
}

// Byte offset of 16-row reduction step `slice` in an MN-major tile: 16 rows further down every
// sub-tile.
__device__ __forceinline__ constexpr std::uint32_t mn_major_step_offset(int slice) {
  return slice * 16 * kSubTileRowBytes;
}

// Waits until at most kPending of this warpgroup's committed GEMMs are in flight; the
// accumulators of the completed ones may then be read.
template <int kPending, int kNTiles>
__device__ __forceinline__ void wait_for_gemms(float (&accumulators)[kNTiles][4]) {
  ptx::fence_operands(accumulators);
  ptx::wgmma_wait_group<kPending>();
  ptx::fence_operands(accumulators);
}

// Issues a transposed score tile (Sᵀ = K·Qᵀ or dPᵀ = V·dOᵀ) of the warpgroup's 64 keys against
// the query block as one committed group: d / 16 wgmmas, the first overwriting the accumulators.
// `keys` is K_rows or V_rows, `queries` Q or dO of the stage in use.
template <KernelConfig C>
__device__ __forceinline__ void issue_transposed_scores(
    Accumulators<1, Shape<C>::kScoreNTiles>& scores, std::uint64_t keys, std::uint64_t queries) {
  ptx::fence_operands(scores[0]);
  ptx::wgmma_fence();
#pragma unroll
  for (int slice = 0; slice < Shape<C>::kDSlices; ++slice) {
    ptx::WgmmaOp<C.dtype, C.B_r>::template ss<0>(
        scores[0], wgmma::advance_descriptor(keys, k_major_step_offset<C.B_c>(slice)),
        wgmma::advance_descriptor(queries, k_major_step_offset<C.B_r>(slice)), slice > 0);
  }
  ptx::wgmma_commit_group();
}

// Issues gradient += A·B for the warpgroup's 64 keys (dV += Pᵀ·dO or dK += dSᵀ·Q) as one
// committed group: B_r / 16 wgmmas with A's k-slice from registers and B (dO or Q of the stage in
// use) read MN-major. Neither the gradient nor A may be touched before wait_for_gemms.
template <KernelConfig C>
__device__ __forceinline__ void issue_gradient(Accumulators<1, Shape<C>::kGradientNTiles>& gradient,
                                               const AFragments<1, Shape<C>::kQuerySlices>& A,
                                               std::uint64_t queries_mn) {
  ptx::fence_operands(gradient[0]);
  ptx::wgmma_fence();
#pragma unroll
  for (int slice = 0; slice < Shape<C>::kQuerySlices; ++slice) {
    ptx::WgmmaOp<C.dtype, C.d_head>::template rs<1>(
        gradient[0], A[0][slice],
        wgmma::advance_descriptor(queries_mn, mn_major_step_offset(slice)), true);
  }
  ptx::wgmma_commit_group();
}

// Issues kSlices 16-key reduction steps of the warpgroup's dQ = dS·K (64 queries x 64 columns),
// from step `first_slice` on, as one committed group, both operands from SMEM: dSᵀ (a row per
// key) read M-major, K read MN-major. The first step overwrites the accumulators unless
// `accumulate`. B6 issues dQ at d_head 128 as two such groups, the consumer's own 64 keys first
// and the other consumer's once their dSᵀ rows are in (kernel.cuh); at d_head 64 one group covers
// the warpgroup's own keys, all of its dQ.
template <KernelConfig C, int kSlices>
__device__ __forceinline__ void issue_dq(Accumulators<1, Shape<C>::kDqNTiles>& dQ,
                                         std::uint64_t dS_m, std::uint64_t K_mn, int first_slice,
                                         bool accumulate) {
  ptx::fence_operands(dQ[0]);
  ptx::wgmma_fence();
#pragma unroll
  for (int step = 0; step < kSlices; ++step) {
    const int slice = first_slice + step;
    ptx::WgmmaOp<C.dtype, Shape<C>::kDqColumns>::template ss<1, 1>(
        dQ[0], wgmma::advance_descriptor(dS_m, mn_major_step_offset(slice)),
        wgmma::advance_descriptor(K_mn, mn_major_step_offset(slice)), accumulate || step > 0);
  }
  ptx::wgmma_commit_group();
}

}  // namespace flashscope::b06
