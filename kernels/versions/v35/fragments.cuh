// Register fragments (spec §3.2). From step 17 the tensor cores read K, V and Q from SMEM
// themselves (wgmma descriptors), so no ldmatrix fragments remain: what is left is the
// accumulator layout, which wgmma's D registers share with the mma.sync m16n8 C fragment, the A
// fragment P is rebuilt into, and the O store (from step 25 straight to GMEM, from step 26 to each
// row's own address). Lanes: g = lane / 4 (row within an 8-row group), t = lane % 4.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/v35/layout.cuh"

namespace flashscope::v35 {

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

// Transposes a 4 x 4 matrix of 4-byte pairs across the four lanes of a quad (lane t = lane % 4):
// on entry pairs[j] is lane t's pair of 8-column fragment j (columns 2t, 2t + 1); on return
// pairs[i] is lane i's pair of fragment t, so lane t holds the 16 contiguous bytes of fragment t.
// Each lane bit is one butterfly step: a lane swaps the two pairs whose index bit differs from its
// own lane bit with the partner lane's matching pairs (indices {bit, 3} on a low lane, {0, 3 - bit}
// on a high one; both lanes send them in the order of the other index bit). Two shuffles per
// step; selects instead of dynamic indices keep the pairs in registers.
__device__ __forceinline__ void transpose_quad(std::uint32_t (&pairs)[4], int t) {
#pragma unroll
  for (int bit = 1; bit <= 2; bit <<= 1) {
    const int other = 3 - bit;
    const bool high = (t & bit) != 0;
    const std::uint32_t received_a =
        __shfl_xor_sync(0xffffffffu, high ? pairs[0] : pairs[bit], bit);
    const std::uint32_t received_b =
        __shfl_xor_sync(0xffffffffu, high ? pairs[other] : pairs[3], bit);
    pairs[0] = high ? received_a : pairs[0];
    pairs[other] = high ? received_b : pairs[other];
    pairs[bit] = high ? pairs[bit] : received_a;
    pairs[3] = high ? pairs[3] : received_b;
  }
}

// Writes this warp's O accumulators, rounded to 16 bits, straight from the registers to GMEM:
// `rows[half]` points at column 0 of the lane's row g (half 0) or g + 8 (half 1) of O, or is
// nullptr where that row is not stored (step 26: a packed tile's rows are (position, head) pairs,
// so each row has its own address, and idle rows or positions past seq_len have none). The m16n8
// layout gives a lane one 4-byte pair per 8-column fragment and row, a quad 16 bytes: stored as
// they are, a warp instruction would write 8 rows x 16 bytes. A quad transpose of four fragments
// first gives each lane 16 contiguous bytes, so one 16-byte store per lane writes 8 rows x 64
// bytes: a quarter of the store instructions and of the L1 wavefronts, which matters because the
// stores occupy the consumer while the other consumer's GEMMs run (docs/versions/25.md). The four
// lanes of a quad share a row, so a row's pointer is the same in all four: every lane takes part
// in the transpose's shuffles, and only the stores are skipped. Nothing waits for the stores: the
// registers are read as they issue, and no SMEM tile, barrier or proxy fence stands between the
// accumulators and memory.
template <KernelConfig C>
__device__ __forceinline__ void store_O_to_global(
    typename Shape<C>::Element* const (&rows)[2],
    const Accumulators<Shape<C>::kMTiles, Shape<C>::kOutputNTiles>& O, int lane) {
  static_assert(Shape<C>::kOutputNTiles % 4 == 0, "fragments are transposed in fours");
  static_assert(Shape<C>::kMTiles == 1, "two rows per thread: one m-tile");
  const int t = lane % 4;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    typename Shape<C>::Element* const row = rows[half];
#pragma unroll
    for (int group = 0; group < Shape<C>::kOutputNTiles / 4; ++group) {
      std::uint32_t pairs[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float(&fragment)[4] = O[0][4 * group + j];
        pairs[j] = ptx::pack_pair<C.dtype>(fragment[2 * half], fragment[2 * half + 1]);
      }
      transpose_quad(pairs, t);
      if (row != nullptr)
        *reinterpret_cast<uint4*>(row + 8 * (4 * group + t)) =
            make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
    }
  }
}

}  // namespace flashscope::v35
