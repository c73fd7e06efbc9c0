// CTA-cooperative GMEM <-> SMEM block copies of backward step B2. Every thread takes part in every
// block copy, so whatever a warp reads after a copy needs a CTA barrier first. Rows past the
// sequence's end are zero-filled on the way in and not written on the way out, so any seq_len
// runs: a zero K or V row adds nothing to dQ, a zero Q or dO row nothing to dK or dV.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/b02/layout.cuh"

namespace flashscope::b02 {

inline constexpr int kChunkElements = 8;  // 16 bytes of 16-bit elements

__device__ __forceinline__ void commit_copies() {
  ptx::cp_async_commit();
}

// Waits until at most kPending committed copy groups are in flight.
template <int kPending>
__device__ __forceinline__ void wait_for_copies() {
  ptx::cp_async_wait<kPending>();
}

// Where this thread's chunks of every block copy lie: thread tid moves row tid / 8 and 16-byte
// chunk tid % 8 of each kCopyRows-row patch of every 64-column sub-tile; every other chunk it
// moves is kCopyRows rows further or one sub-tile further.
template <KernelConfig C>
struct CopyLane {
  __device__ __forceinline__ explicit CopyLane(int tid)
      : row(tid / 8),
        column(kChunkElements * (tid % 8)),
        smem_first_chunk(sub_tile_offset<C>(tid / 8, kChunkElements * (tid % 8))) {}

  int row;               // the thread's first row of a block
  int column;            // its column within a 64-column sub-tile
  int smem_first_chunk;  // element offset of its first chunk in any tile
};

// Copies the kRows rows starting at `gmem_block` (row stride `gmem_row_stride` elements) into
// `tile` with cp.async; rows from `valid_rows` on are zero-filled (and read from the block's first
// row, an address that exists). A whole block (every block but a sequence's last, partial one)
// takes a branch without the per-row checks: one address and fixed steps. The caller commits the
// copies.
template <KernelConfig C, int kRows>
__device__ __forceinline__ void copy_block_to_smem(typename Shape<C>::Element* tile,
                                                   const typename Shape<C>::Element* gmem_block,
                                                   std::int64_t gmem_row_stride, int valid_rows,
                                                   const CopyLane<C>& lane) {
  constexpr int kRowSteps = kRows / Shape<C>::kCopyRows;
  constexpr int kSubTiles = C.d_head / kSubTileColumns;
  if (valid_rows >= kRows) {
    const typename Shape<C>::Element* const first =
        gmem_block + lane.row * gmem_row_stride + lane.column;
    const std::int64_t row_step_stride = Shape<C>::kCopyRows * gmem_row_stride;
#pragma unroll
    for (int row_step = 0; row_step < kRowSteps; ++row_step) {
#pragma unroll
      for (int sub_tile = 0; sub_tile < kSubTiles; ++sub_tile) {
        ptx::cp_async_16(tile + lane.smem_first_chunk + sub_tile * kRows * kSubTileColumns +
                             row_step * Shape<C>::kCopyRows * kSubTileColumns,
                         first + row_step * row_step_stride + sub_tile * kSubTileColumns);
      }
    }
    return;
  }
#pragma unroll
  for (int row_step = 0; row_step < kRowSteps; ++row_step) {
    const int row = lane.row + row_step * Shape<C>::kCopyRows;
    const bool valid = row < valid_rows;
    const typename Shape<C>::Element* const source =
        gmem_block + (valid ? row : 0) * gmem_row_stride + lane.column;
#pragma unroll
    for (int sub_tile = 0; sub_tile < kSubTiles; ++sub_tile) {
      ptx::cp_async_16_zfill(tile + lane.smem_first_chunk + sub_tile * kRows * kSubTileColumns +
                                 row_step * Shape<C>::kCopyRows * kSubTileColumns,
                             source + sub_tile * kSubTileColumns, valid);
    }
  }
}

// The reverse direction for the epilogue: the first `valid_rows` of the kRows x d_head block in
// `tile` to GMEM with 16-byte coalesced stores (8 threads per 128-byte row segment).
template <KernelConfig C, int kRows>
__device__ __forceinline__ void copy_block_to_gmem(typename Shape<C>::Element* gmem_block,
                                                   std::int64_t gmem_row_stride, int valid_rows,
                                                   const typename Shape<C>::Element* tile,
                                                   const CopyLane<C>& lane) {
  constexpr int kRowSteps = kRows / Shape<C>::kCopyRows;
  constexpr int kSubTiles = C.d_head / kSubTileColumns;
#pragma unroll
  for (int row_step = 0; row_step < kRowSteps; ++row_step) {
    const int row = lane.row + row_step * Shape<C>::kCopyRows;
    if (row >= valid_rows) break;  // rows grow with row_step
#pragma unroll
    for (int sub_tile = 0; sub_tile < kSubTiles; ++sub_tile) {
      *reinterpret_cast<uint4*>(gmem_block + row * gmem_row_stride + lane.column +
                                sub_tile * kSubTileColumns) =
          *reinterpret_cast<const uint4*>(tile + lane.smem_first_chunk +
                                          sub_tile * kRows * kSubTileColumns +
                                          row_step * Shape<C>::kCopyRows * kSubTileColumns);
    }
  }
}

// Copies `count` fp32 values (a multiple of 4) from `gmem` to `smem` with the first count / 4
// threads of the CTA starting at thread `first_thread`, one 16-byte cp.async each.
__device__ __forceinline__ void copy_vector_to_smem(float* smem, const float* gmem, int count,
                                                    int first_thread, int tid) {
  const int chunk = tid - first_thread;
  if (chunk >= 0 && chunk < count / 4) ptx::cp_async_16(smem + 4 * chunk, gmem + 4 * chunk);
}

}  // namespace flashscope::b02
