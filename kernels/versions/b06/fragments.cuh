// Register fragments of backward step B5. The tensor cores read K, V, Q, dO and dSᵀ from shared
// memory themselves (wgmma descriptors), so no ldmatrix fragments remain: what is left is the
// accumulator layout, which wgmma's D registers share with the mma.sync m16n8 C fragment, the A
// fragments P and dS are rebuilt into, and the stores of dSᵀ, dK and dV. Lanes: g = lane / 4 (row
// within an 8-row group), t = lane % 4.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/common/ptx_hopper.cuh"
#include "kernels/versions/b06/layout.cuh"

namespace flashscope::b06 {

// A operand from registers (P, dS), [m-tile][16-wide k-slice][a0..a3]: 16 rows x 16 reduction
// columns; a warp's share of the 64 x 16 A of wgmma's register-A form is exactly this fragment.
template <int kMTiles, int kSlices>
using AFragments = std::uint32_t[kMTiles][kSlices][4];
// fp32 accumulators, [m-tile][n-tile][c0..c3]: c0, c1 in row g, c2, c3 in row g + 8, columns 2t
// and 2t + 1 of the n-tile. For a 64 x N wgmma, a warp's [0][n][0..3] are the registers of
// 8-column block n of its 16 rows.
template <int kMTiles, int kNTiles>
using Accumulators = float[kMTiles][kNTiles][4];

template <int kMTiles, int kNTiles>
__device__ __forceinline__ void zero(Accumulators<kMTiles, kNTiles>& accumulators) {
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        accumulators[m][n][i] = 0.0f;
    }
  }
}

// Tells the compiler the fragments are used here, so their registers are not handed to other
// values while an in-flight wgmma still reads them as its A operand.
template <int kMTiles, int kSlices>
__device__ __forceinline__ void fence_fragments(AFragments<kMTiles, kSlices>& A) {
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
    for (int slice = 0; slice < kSlices; ++slice) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        ptx::fence_operand(A[m][slice][i]);
    }
  }
}

// P or dS (in the transposed scores' accumulator layout, a row per key) as the A operand of
// dV += Pᵀ·dO or dK += dSᵀ·Q without shuffles: the C fragments of n-tiles 2j and 2j + 1 hold
// exactly the a0..a3 pairs of k-slice j.
template <DType kDType, int kMTiles, int kScoreNTiles>
__device__ __forceinline__ void convert_to_A_fragments(
    AFragments<kMTiles, kScoreNTiles / 2>& P, const Accumulators<kMTiles, kScoreNTiles>& S) {
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
    for (int slice = 0; slice < kScoreNTiles / 2; ++slice) {
      P[m][slice][0] = ptx::pack_pair<kDType>(S[m][2 * slice][0], S[m][2 * slice][1]);
      P[m][slice][1] = ptx::pack_pair<kDType>(S[m][2 * slice][2], S[m][2 * slice][3]);
      P[m][slice][2] = ptx::pack_pair<kDType>(S[m][2 * slice + 1][0], S[m][2 * slice + 1][1]);
      P[m][slice][3] = ptx::pack_pair<kDType>(S[m][2 * slice + 1][2], S[m][2 * slice + 1][3]);
    }
  }
}

// The 16-bit pair of element (row g + 8·(i / 2), columns 2t, 2t + 1 of n-tile n) in A fragments
// built by convert_to_A_fragments: the register that holds accumulator n's c_i, c_{i+1} (i even).
template <int kMTiles, int kSlices>
__device__ __forceinline__ std::uint32_t A_pair_of(const AFragments<kMTiles, kSlices>& A, int m,
                                                   int n, int i) {
  return A[m][n / 2][2 * (n % 2) + i / 2];
}

// Writes this warp's 16 rows (from tile row `warp_first_row`) of A fragments (dSᵀ, a row per key)
// into a swizzled SMEM tile of kRows rows: one 4-byte pair per (row g or g + 8, column 2t) of
// every 8-column fragment. The swizzled address of the thread's (row g, column 2t) is computed
// once; every store adds a compile-time row offset and a choice of the row's fragment steps.
template <KernelConfig C, int kRows, int kSlices>
__device__ __forceinline__ void store_A_fragments(typename Shape<C>::Element* tile,
                                                  int warp_first_row,
                                                  const AFragments<1, kSlices>& A, int lane) {
  const int row = warp_first_row + lane / 4;
  typename Shape<C>::Element* const thread_base = tile + smem_offset<C, kRows>(row, 2 * (lane % 4));
  const FragmentSteps steps = fragment_steps<C>(row);
#pragma unroll
  for (int n = 0; n < 2 * kSlices; ++n) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int offset = 8 * half * kSubTileColumns + fragment_offset<kRows>(steps, n);
      *reinterpret_cast<std::uint32_t*>(thread_base + offset) = A_pair_of(A, 0, n, 2 * half);
    }
  }
}

// Writes this warp's 16 rows of fp32 accumulators (dK or dV, times `scale`), rounded to 16 bits,
// into a swizzled SMEM tile of kRows rows, the same way.
template <KernelConfig C, int kRows, int kNTiles>
__device__ __forceinline__ void store_accumulators(typename Shape<C>::Element* tile,
                                                   int warp_first_row,
                                                   const Accumulators<1, kNTiles>& accumulators,
                                                   int lane, float scale = 1.0f) {
  const int row = warp_first_row + lane / 4;
  typename Shape<C>::Element* const thread_base = tile + smem_offset<C, kRows>(row, 2 * (lane % 4));
  const FragmentSteps steps = fragment_steps<C>(row);
#pragma unroll
  for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int offset = 8 * half * kSubTileColumns + fragment_offset<kRows>(steps, n);
      *reinterpret_cast<std::uint32_t*>(thread_base + offset) = ptx::pack_pair<C.dtype>(
          scale * accumulators[0][n][2 * half], scale * accumulators[0][n][2 * half + 1]);
    }
  }
}

}  // namespace flashscope::b06
