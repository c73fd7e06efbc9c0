// Register fragments (spec §3.2). From step 17 the tensor cores read K, V and Q from SMEM
// themselves (wgmma descriptors), so no ldmatrix fragments remain: what is left is the
// accumulator layout, which wgmma's D registers share with the mma.sync m16n8 C fragment, the A
// fragment P is rebuilt into, and the O store (from step 25 straight to GMEM). Lanes: g = lane / 4
// (row within an 8-row group), t = lane % 4.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/v25/layout.cuh"

namespace flashscope::v25 {

// A operand from registers (P), [m-tile][16-wide k-slice][a0..a3]: 16 rows x 16 reduction
// columns; a warp's share of the 64 x 16 A of wgmma's register-A form is exactly this fragment.
template <int kMTiles, int kSlices>
using AFragments = std::uint32_t[kMTiles][kSlices][4];
// fp32 accumulators (S or O), [m-tile][n-tile][c0..c3]: c0, c1 in row g, c2, c3 in row g + 8.
// For a 64 x N wgmma, a warp's [0][n][0..3] are the registers of 8-column block n.
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

// P (probabilities in S's accumulator layout) as the A operand of P·V without shuffles: the
// C fragments of n-tiles 2j and 2j+1 hold exactly the a0..a3 pairs of k-slice j.
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

// Writes this warp's O accumulators, rounded to 16 bits, straight from the registers to GMEM:
// `thread_row` points at the thread's (row g, column 2t) of O, `row_stride` elements apart from
// the next sequence position, and every 8-column fragment stores one 4-byte pair in row g and one
// in row g + 8. The four lanes of a quad fill 16 contiguous bytes of a row per fragment, the
// fragments 2k and 2k + 1 one whole 32-byte sector between them. Nothing waits for the stores:
// the registers are read when the instructions issue, so the next tile's GEMMs start at once, and
// no SMEM tile, barrier or proxy fence stands between the accumulators and memory.
template <KernelConfig C>
__device__ __forceinline__ void store_O_to_global(
    typename Shape<C>::Element* thread_row, std::int64_t row_stride,
    const Accumulators<Shape<C>::kMTiles, Shape<C>::kOutputNTiles>& O) {
#pragma unroll
  for (int m = 0; m < Shape<C>::kMTiles; ++m) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      typename Shape<C>::Element* const row = thread_row + (16 * m + 8 * half) * row_stride;
#pragma unroll
      for (int n = 0; n < Shape<C>::kOutputNTiles; ++n) {
        *reinterpret_cast<std::uint32_t*>(row + 8 * n) =
            ptx::pack_pair<C.dtype>(O[m][n][2 * half], O[m][n][2 * half + 1]);
      }
    }
  }
}

}  // namespace flashscope::v25
