// Register fragments of the m16n8k16 mma and their SMEM -> RF / RF -> SMEM transfers
// (spec §3.2). Lanes: g = lane / 4 (row within an 8-row group), t = lane % 4.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/v15/layout.cuh"

namespace flashscope::v15 {

// A operand (Q or P), [m-tile][16-wide k-slice][a0..a3]: 16 rows x 16 reduction columns.
template <int kMTiles, int kSlices>
using AFragments = std::uint32_t[kMTiles][kSlices][4];
// B operand (K or V), [n-tile][16-wide k-slice][b0, b1]: 16 reduction rows x 8 columns.
template <int kNTiles, int kSlices>
using BFragments = std::uint32_t[kNTiles][kSlices][2];
// fp32 accumulators (S or O), [m-tile][n-tile][c0..c3]: c0, c1 in row g, c2, c3 in row g + 8.
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

// A lane's ldmatrix row address in one SMEM tile of kTileRows rows, computed once per thread
// (spec §4.8): the shared-space byte address of its (row, col) in 16-column tile 0 and the signed
// tile steps of its row. Every address the lane later issues is this base plus a compile-time
// row offset (a multiple of 8 rows, so the swizzle is unchanged) plus a compile-time choice of
// steps and sub-tile.
template <KernelConfig C, int kTileRows>
class LdmatrixLane {
 public:
  __device__ __forceinline__ LdmatrixLane(std::uint32_t tile_address, int row, int col)
      : base_(tile_address + 2 * smem_offset<C, kTileRows>(row, col)), steps_(tile_steps<C>(row)) {}

  // The lane's address `rows` rows further down (a multiple of 8) in 16-column tile `tile`.
  __device__ __forceinline__ std::uint32_t at(int rows, int tile) const {
    return base_ + 2 * (rows * kSubTileColumns + tile_offset<kTileRows>(steps_, tile));
  }

 private:
  std::uint32_t base_;
  TileSteps steps_;
};

// Q and V are read as 16x16 regions in which lanes 0-15 address rows 0-15 of columns 0-7 and
// lanes 16-31 the same rows of columns 8-15. The four results are the 8x8 blocks (rows 0-7,
// cols 0-7), (rows 8-15, cols 0-7), (rows 0-7, cols 8-15), (rows 8-15, cols 8-15).
template <KernelConfig C>
__device__ __forceinline__ LdmatrixLane<C, C.B_r> Q_lane(std::uint32_t Q_tile, int warp_first_row,
                                                         int lane) {
  return LdmatrixLane<C, C.B_r>(Q_tile, warp_first_row + lane % 16, 8 * (lane / 16));
}

// K is read row-major instead (spec §4.9): lanes 0-7 address rows 0-7 of columns 0-7, lanes
// 8-15 the same rows of columns 8-15, lanes 16-31 rows 8-15 likewise. The results are then
// (rows 0-7, cols 0-7), (rows 0-7, cols 8-15), (rows 8-15, cols 0-7), (rows 8-15, cols 8-15).
// A lane's row mod 8 is still lane mod 8 and its column 0 or 8, so the tile steps are unchanged.
template <KernelConfig C>
__device__ __forceinline__ LdmatrixLane<C, C.B_c> K_lane(std::uint32_t K_tile, int lane) {
  return LdmatrixLane<C, C.B_c>(K_tile, lane % 8 + 8 * (lane / 16), 8 * (lane / 8 % 2));
}

template <KernelConfig C>
__device__ __forceinline__ LdmatrixLane<C, C.B_c> V_lane(std::uint32_t V_tile, int lane) {
  return LdmatrixLane<C, C.B_c>(V_tile, lane % 16, 8 * (lane / 16));
}

// Q fragments of this warp's query rows for k-slices [first_slice, first_slice + kSlices) of d.
// The 8x8 block order of the load is exactly a0..a3.
template <KernelConfig C, int kSlices>
__device__ __forceinline__ void load_Q_fragments(AFragments<Shape<C>::kMTiles, kSlices>& Q,
                                                 const LdmatrixLane<C, C.B_r>& lane_address,
                                                 int first_slice) {
#pragma unroll
  for (int slice = 0; slice < kSlices; ++slice) {
#pragma unroll
    for (int m = 0; m < Shape<C>::kMTiles; ++m) {
      ptx::ldmatrix_x4(Q[m][slice], lane_address.at(16 * m, first_slice + slice));
    }
  }
}

// K fragments for k-slices [first_slice, first_slice + kSlices) of d. K is stored [key][d],
// i.e. Bᵀ row-major, so one untransposed 16x16 load covers two 8-key n-tiles. In row-major
// order blocks 0, 1 are b0, b1 of the first n-tile and blocks 2, 3 those of the second: each
// mma's B operand is two consecutive registers of the load, with no copies to pair them up.
template <KernelConfig C, int kSlices>
__device__ __forceinline__ void load_K_fragments(BFragments<Shape<C>::kScoreNTiles, kSlices>& K,
                                                 const LdmatrixLane<C, C.B_c>& lane_address,
                                                 int first_slice) {
#pragma unroll
  for (int slice = 0; slice < kSlices; ++slice) {
#pragma unroll
    for (int n_pair = 0; n_pair < Shape<C>::kScoreNTiles / 2; ++n_pair) {
      std::uint32_t blocks[4];
      ptx::ldmatrix_x4(blocks, lane_address.at(16 * n_pair, first_slice + slice));
      K[2 * n_pair][slice][0] = blocks[0];
      K[2 * n_pair][slice][1] = blocks[1];
      K[2 * n_pair + 1][slice][0] = blocks[2];
      K[2 * n_pair + 1][slice][1] = blocks[3];
    }
  }
}

// V fragments for 16-key k-slices [first_slice, first_slice + kSlices). V is stored [key][d],
// i.e. B row-major, so the transposing load yields b0, b1 of the first 8-wide d n-tile from
// blocks 0 and 1 and those of the second from blocks 2 and 3.
template <KernelConfig C, int kSlices>
__device__ __forceinline__ void load_V_fragments(BFragments<Shape<C>::kOutputNTiles, kSlices>& V,
                                                 const LdmatrixLane<C, C.B_c>& lane_address,
                                                 int first_slice) {
#pragma unroll
  for (int slice = 0; slice < kSlices; ++slice) {
#pragma unroll
    for (int n_pair = 0; n_pair < Shape<C>::kOutputNTiles / 2; ++n_pair) {
      std::uint32_t blocks[4];
      ptx::ldmatrix_x4_trans(blocks, lane_address.at(16 * (first_slice + slice), n_pair));
      V[2 * n_pair][slice][0] = blocks[0];
      V[2 * n_pair][slice][1] = blocks[1];
      V[2 * n_pair + 1][slice][0] = blocks[2];
      V[2 * n_pair + 1][slice][1] = blocks[3];
    }
  }
}

// One 16-wide reduction slice of D += A·B over every (m-tile, n-tile) pair (spec §4.9): n-tile
// outer, m-tile inner, and on odd n-tiles the m-tiles in reverse, so consecutive mmas share an
// operand (the B pair within an n-tile, the A fragment across the turn).
template <DType kDType, int kMTiles, int kNTiles, int kASlices, int kBSlices>
__device__ __forceinline__ void mma_slice(Accumulators<kMTiles, kNTiles>& D,
                                          const AFragments<kMTiles, kASlices>& A, int a_slice,
                                          const BFragments<kNTiles, kBSlices>& B, int b_slice) {
#pragma unroll
  for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
    for (int i = 0; i < kMTiles; ++i) {
      const int m = n % 2 == 0 ? i : kMTiles - 1 - i;
      ptx::mma_m16n8k16<kDType>(D[m][n], A[m][a_slice], B[n][b_slice][0], B[n][b_slice][1]);
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

// Writes this warp's O accumulators, rounded to 16 bits, into its own rows of the SMEM tile:
// one 4-byte pair per (row g or g + 8, column 2t) of every 8-column fragment. Encoded swizzling
// (spec §4.11): the swizzled address of the thread's (row g, column 2t) is computed once, and
// every store adds a compile-time row offset (a multiple of 8 rows), sub-tile and choice of the
// row's three signed fragment steps.
template <KernelConfig C>
__device__ __forceinline__ void store_O_fragments(
    typename Shape<C>::Element* O_tile, int warp_first_row,
    const Accumulators<Shape<C>::kMTiles, Shape<C>::kOutputNTiles>& O, int lane) {
  const int row = warp_first_row + lane / 4;
  typename Shape<C>::Element* const thread_base =
      O_tile + smem_offset<C, C.B_r>(row, 2 * (lane % 4));
  const FragmentSteps steps = fragment_steps<C>(row);
#pragma unroll
  for (int m = 0; m < Shape<C>::kMTiles; ++m) {
#pragma unroll
    for (int n = 0; n < Shape<C>::kOutputNTiles; ++n) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int offset = (16 * m + 8 * half) * kSubTileColumns + fragment_offset<C.B_r>(steps, n);
        *reinterpret_cast<std::uint32_t*>(thread_base + offset) =
            ptx::pack_pair<C.dtype>(O[m][n][2 * half], O[m][n][2 * half + 1]);
      }
    }
  }
}

}  // namespace flashscope::v15
