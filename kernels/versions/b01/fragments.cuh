// Register fragments of the m16n8k16 mma, their SMEM -> RF loads and the accumulator stores of
// backward step B1. Lanes: g = lane / 4 (row within an 8-row group), t = lane % 4.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/b01/layout.cuh"

namespace flashscope::b01 {

// A operand, [m-tile][16-wide k-slice][a0..a3]: 16 rows x 16 reduction columns.
template <int kMTiles, int kSlices>
using AFragments = std::uint32_t[kMTiles][kSlices][4];
// B operand of two neighbouring n-tiles of one k-slice, [n-tile][b0, b1]: 16 reduction rows x 16.
using BPair = std::uint32_t[2][2];
// fp32 accumulators, [m-tile][n-tile][c0..c3]: c0, c1 in row g, c2, c3 in row g + 8, columns 2t
// and 2t + 1 of the n-tile.
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

// A lane's ldmatrix row address in one SMEM tile of kTileRows rows, computed once per thread: the
// shared-space byte address of its (row, col) in 16-column tile 0 and the tile steps of its row.
// Every address the lane later issues is this base plus a row offset (a multiple of 8 rows) and
// a choice of steps and sub-tile.
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

// The two ways a lane addresses a 16x16 region of a row-major tile:
//  - row-major: lanes 0-15 rows 0-15 of columns 0-7, lanes 16-31 the same rows of columns
//    8-15. Untransposed, the four 8x8 blocks are a0..a3 of an A operand whose rows are the tile's
//    rows (K, V, P, dS as A); transposed, they are b0, b1 of two 8-column n-tiles of a B operand
//    whose reduction runs down the tile's rows (dO and Q for dV and dK, K for dQ).
//  - paired: lanes 0-7 rows 0-7 of columns 0-7, lanes 8-15 the same rows of columns 8-15, lanes
//    16-31 rows 8-15 likewise. Untransposed, blocks 0, 1 are b0, b1 of the n-tile of rows 0-7 and
//    blocks 2, 3 those of rows 8-15, for a B operand whose reduction runs along the tile's
//    columns (Q and dO for Sᵀ and dPᵀ); transposed, they are a0..a3 of an A operand whose rows
//    are the tile's columns (dS, stored a row per key, as the A of dQ = dS·K).
// `first_row` (a multiple of 8) and `first_col` (a multiple of 16) place the region of the warp:
// every later offset from there is a compile-time constant.
template <KernelConfig C, int kTileRows>
__device__ __forceinline__ LdmatrixLane<C, kTileRows> row_major_lane(std::uint32_t tile,
                                                                     int first_row, int first_col,
                                                                     int lane) {
  return LdmatrixLane<C, kTileRows>(tile, first_row + lane % 16, first_col + 8 * (lane / 16));
}

template <KernelConfig C, int kTileRows>
__device__ __forceinline__ LdmatrixLane<C, kTileRows> paired_lane(std::uint32_t tile, int first_row,
                                                                  int first_col, int lane) {
  return LdmatrixLane<C, kTileRows>(tile, first_row + lane % 8 + 8 * (lane / 16),
                                    first_col + 8 * (lane / 8 % 2));
}

template <KernelConfig C, int kTileRows>
__device__ __forceinline__ void load_A(std::uint32_t (&a)[4],
                                       const LdmatrixLane<C, kTileRows>& lane, int rows, int tile) {
  ptx::ldmatrix_x4(a, lane.at(rows, tile));
}

template <KernelConfig C, int kTileRows>
__device__ __forceinline__ void load_A_transposed(std::uint32_t (&a)[4],
                                                  const LdmatrixLane<C, kTileRows>& lane, int rows,
                                                  int tile) {
  ptx::ldmatrix_x4_trans(a, lane.at(rows, tile));
}

template <KernelConfig C, int kTileRows>
__device__ __forceinline__ void load_B_pair(BPair& b, const LdmatrixLane<C, kTileRows>& lane,
                                            int rows, int tile) {
  std::uint32_t blocks[4];
  ptx::ldmatrix_x4(blocks, lane.at(rows, tile));
  b[0][0] = blocks[0];
  b[0][1] = blocks[1];
  b[1][0] = blocks[2];
  b[1][1] = blocks[3];
}

template <KernelConfig C, int kTileRows>
__device__ __forceinline__ void load_B_pair_transposed(BPair& b,
                                                       const LdmatrixLane<C, kTileRows>& lane,
                                                       int rows, int tile) {
  std::uint32_t blocks[4];
  ptx::ldmatrix_x4_trans(blocks, lane.at(rows, tile));
  b[0][0] = blocks[0];
  b[0][1] = blocks[1];
  b[1][0] = blocks[2];
  b[1][1] = blocks[3];
}

// Accumulators of a warp's keys x queries (Sᵀ's layout) as the A operand of a GEMM that reduces
// over the queries, without shuffles: the C fragments of n-tiles 2j and 2j+1 hold exactly the
// a0..a3 pairs of k-slice j (the forward's P·V trick, kernels/versions/v16/fragments.cuh).
template <DType kDType, int kMTiles, int kNTiles>
__device__ __forceinline__ void convert_to_A_fragments(AFragments<kMTiles, kNTiles / 2>& A,
                                                       const Accumulators<kMTiles, kNTiles>& acc) {
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
    for (int slice = 0; slice < kNTiles / 2; ++slice) {
      A[m][slice][0] = ptx::pack_pair<kDType>(acc[m][2 * slice][0], acc[m][2 * slice][1]);
      A[m][slice][1] = ptx::pack_pair<kDType>(acc[m][2 * slice][2], acc[m][2 * slice][3]);
      A[m][slice][2] = ptx::pack_pair<kDType>(acc[m][2 * slice + 1][0], acc[m][2 * slice + 1][1]);
      A[m][slice][3] = ptx::pack_pair<kDType>(acc[m][2 * slice + 1][2], acc[m][2 * slice + 1][3]);
    }
  }
}

// The packed pair of A fragments that holds accumulator (m, n, i) and i + 1 (i even).
template <int kMTiles, int kSlices>
__device__ __forceinline__ std::uint32_t A_pair_of(const AFragments<kMTiles, kSlices>& A, int m,
                                                   int n, int i) {
  return A[m][n / 2][2 * (n % 2) + i / 2];
}

// Writes 16-bit A fragments back to a tile of kTileRows rows in their accumulator positions:
// register r of slice s holds rows first_row + 16m + g (+ 8 for odd r), columns first_col + 16s +
// 8·(r / 2) + 2t.
template <KernelConfig C, int kTileRows, int kMTiles, int kSlices>
__device__ __forceinline__ void store_A_fragments(typename Shape<C>::Element* tile, int first_row,
                                                  int first_col,
                                                  const AFragments<kMTiles, kSlices>& A, int lane) {
  const int row = first_row + lane / 4;
  typename Shape<C>::Element* const thread_base =
      tile + smem_offset<C, kTileRows>(row, first_col + 2 * (lane % 4));
  const FragmentSteps steps = fragment_steps<C>(row);
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
    for (int slice = 0; slice < kSlices; ++slice) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int offset = (16 * m + 8 * (r % 2)) * kSubTileColumns +
                           fragment_offset<kTileRows>(steps, 2 * slice + r / 2);
        *reinterpret_cast<std::uint32_t*>(thread_base + offset) = A[m][slice][r];
      }
    }
  }
}

// Writes accumulators, rounded to 16 bits and multiplied by `factor`, into a tile of kTileRows
// rows: rows first_row + 16m + g (+ 8), columns first_col + 8n + 2t, one 4-byte pair each.
template <KernelConfig C, int kTileRows, int kMTiles, int kNTiles>
__device__ __forceinline__ void store_accumulators(typename Shape<C>::Element* tile, int first_row,
                                                   int first_col,
                                                   const Accumulators<kMTiles, kNTiles>& acc,
                                                   int lane, float factor = 1.0f) {
  const int row = first_row + lane / 4;
  typename Shape<C>::Element* const thread_base =
      tile + smem_offset<C, kTileRows>(row, first_col + 2 * (lane % 4));
  const FragmentSteps steps = fragment_steps<C>(row);
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int offset =
            (16 * m + 8 * half) * kSubTileColumns + fragment_offset<kTileRows>(steps, n);
        *reinterpret_cast<std::uint32_t*>(thread_base + offset) =
            ptx::pack_pair<C.dtype>(factor * acc[m][n][2 * half], factor * acc[m][n][2 * half + 1]);
      }
    }
  }
}

}  // namespace flashscope::b01
