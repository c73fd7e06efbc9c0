// Per-warp GMEM <-> SMEM block copies of steps 1-7 (spec §3.4, §4.1). Each warp moves only its
// own rows, so a warp that copies Q/O rows and reads only those needs no CTA barrier.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/v01_07/layout.cuh"

namespace flashscope::v01_07 {

// One warp instruction moves a 4-row x 64-column patch: lane -> row lane / 8 of the patch and
// 16-byte chunk lane % 8, so each group of 8 lanes covers one 128-byte row segment.
inline constexpr int kPatchRows = 4;
inline constexpr int kPatchColumns = 64;
inline constexpr int kChunkElements = 8;  // 16 bytes of 16-bit elements

template <KernelConfig C>
__device__ __forceinline__ void commit_copies() {
  if constexpr (C.async_copy) ptx::cp_async_commit();
}

// Waits until at most kPending committed block copies are in flight. Plain copies have
// completed by the time the issuing thread moves on, so there is nothing to wait for.
template <KernelConfig C, int kPending>
__device__ __forceinline__ void wait_for_copies() {
  if constexpr (C.async_copy) ptx::cp_async_wait<kPending>();
}

// Copies kRows rows of d_head elements from GMEM (row stride `gmem_row_stride` elements,
// starting at `gmem_first_row`) into rows [smem_first_row, smem_first_row + kRows) of `tile`.
// With async_copy the copies are cp.async and the caller commits them as one group; otherwise
// every chunk is loaded into registers first and then stored, so all loads are in flight at once.
template <KernelConfig C, int kRows>
__device__ __forceinline__ void copy_rows_to_smem(typename Shape<C>::Element* tile,
                                                  int smem_first_row,
                                                  const typename Shape<C>::Element* gmem_first_row,
                                                  std::int64_t gmem_row_stride, int lane) {
  static_assert(kRows % kPatchRows == 0, "a warp copies whole 4-row patches");
  constexpr int kRowSteps = kRows / kPatchRows;
  constexpr int kColumnSteps = C.d_head / kPatchColumns;
  const int lane_row = lane / kChunkElements;
  const int lane_column = (lane % kChunkElements) * kChunkElements;

  if constexpr (C.async_copy) {
#pragma unroll
    for (int row_step = 0; row_step < kRowSteps; ++row_step) {
      const int row = row_step * kPatchRows + lane_row;
#pragma unroll
      for (int column_step = 0; column_step < kColumnSteps; ++column_step) {
        const int column = column_step * kPatchColumns + lane_column;
        ptx::cp_async_16(tile + smem_offset<C>(smem_first_row + row, column),
                         gmem_first_row + row * gmem_row_stride + column);
      }
    }
  } else {
    uint4 staged[kRowSteps][kColumnSteps];
#pragma unroll
    for (int row_step = 0; row_step < kRowSteps; ++row_step) {
      const int row = row_step * kPatchRows + lane_row;
#pragma unroll
      for (int column_step = 0; column_step < kColumnSteps; ++column_step) {
        const int column = column_step * kPatchColumns + lane_column;
        staged[row_step][column_step] =
            *reinterpret_cast<const uint4*>(gmem_first_row + row * gmem_row_stride + column);
      }
    }
#pragma unroll
    for (int row_step = 0; row_step < kRowSteps; ++row_step) {
      const int row = row_step * kPatchRows + lane_row;
#pragma unroll
      for (int column_step = 0; column_step < kColumnSteps; ++column_step) {
        const int column = column_step * kPatchColumns + lane_column;
        *reinterpret_cast<uint4*>(tile + smem_offset<C>(smem_first_row + row, column)) =
            staged[row_step][column_step];
      }
    }
  }
}

// The reverse direction for the epilogue: rows [smem_first_row, smem_first_row + kRows) of
// `tile` to GMEM with 16-byte coalesced stores (8 lanes per 128-byte row segment).
template <KernelConfig C, int kRows>
__device__ __forceinline__ void copy_rows_to_gmem(typename Shape<C>::Element* gmem_first_row,
                                                  std::int64_t gmem_row_stride,
                                                  const typename Shape<C>::Element* tile,
                                                  int smem_first_row, int lane) {
  static_assert(kRows % kPatchRows == 0, "a warp copies whole 4-row patches");
  constexpr int kRowSteps = kRows / kPatchRows;
  constexpr int kColumnSteps = C.d_head / kPatchColumns;
  const int lane_row = lane / kChunkElements;
  const int lane_column = (lane % kChunkElements) * kChunkElements;

#pragma unroll
  for (int row_step = 0; row_step < kRowSteps; ++row_step) {
    const int row = row_step * kPatchRows + lane_row;
#pragma unroll
    for (int column_step = 0; column_step < kColumnSteps; ++column_step) {
      const int column = column_step * kPatchColumns + lane_column;
      *reinterpret_cast<uint4*>(gmem_first_row + row * gmem_row_stride + column) =
          *reinterpret_cast<const uint4*>(tile + smem_offset<C>(smem_first_row + row, column));
    }
  }
}

}  // namespace flashscope::v01_07
