// CTA-cooperative GMEM <-> SMEM block copies (spec §3.4, §4.8). Every thread takes part in every
// block copy, so whatever a warp reads after a copy (Q, K, V, or the O rows on the way out)
// needs a CTA barrier first.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/v09/layout.cuh"

namespace flashscope::v09 {

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

// Where this thread's chunks of every block copy lie, computed once per thread (spec §4.8).
// Thread tid moves row tid / 8 and 16-byte chunk tid % 8 of each kCopyRows-row x 64-column
// patch. Every other chunk it moves is a fixed step away: kCopyRows rows further (a multiple of
// 8, so row mod 8 and the swizzle are unchanged) or 64 columns further (chunk bit 3, which the
// swizzle leaves alone). So swizzle(first + step) = swizzle(first) + step, and in SMEM every step
// is a compile-time constant.
template <KernelConfig C>
struct CopyLane {
  __device__ __forceinline__ CopyLane(int tid, int gmem_row_stride)
      : smem_first_chunk(smem_offset<C>(tid / 8, kChunkElements * (tid % 8))),
        gmem_first_chunk(tid / 8 * gmem_row_stride + kChunkElements * (tid % 8)),
        gmem_row_stride(gmem_row_stride) {}

  int smem_first_chunk;  // swizzled element offset of the thread's first chunk in any tile
  int gmem_first_chunk;  // element offset of that chunk from the first element of a GMEM block
  // Elements between sequence positions in GMEM; 32 bits suffice because launch validation
  // keeps seq_len x heads x d_head within the int range.
  int gmem_row_stride;
};

// Copies the kRows x d_head block whose first chunk for this thread is `gmem_chunk` (the
// block's first element plus lane.gmem_first_chunk) into `tile`. With async_copy the copies are
// cp.async and the caller commits them as one group; otherwise every chunk is loaded into
// registers first and then stored, so all loads are in flight at once.
template <KernelConfig C, int kRows>
__device__ __forceinline__ void copy_block_to_smem(typename Shape<C>::Element* tile,
                                                   const typename Shape<C>::Element* gmem_chunk,
                                                   const CopyLane<C>& lane) {
  constexpr int kRowSteps = kRows / Shape<C>::kCopyRows;
  constexpr int kColumnSteps = C.d_head / kPatchColumns;
  constexpr int kSmemRowStep = Shape<C>::kCopyRows * C.d_head;
  const int gmem_row_step = Shape<C>::kCopyRows * lane.gmem_row_stride;

  if constexpr (C.async_copy) {
#pragma unroll
    for (int row_step = 0; row_step < kRowSteps; ++row_step) {
#pragma unroll
      for (int column_step = 0; column_step < kColumnSteps; ++column_step) {
        ptx::cp_async_16(
            tile + lane.smem_first_chunk + row_step * kSmemRowStep + column_step * kPatchColumns,
            gmem_chunk + row_step * gmem_row_step + column_step * kPatchColumns);
      }
    }
  } else {
    uint4 staged[kRowSteps][kColumnSteps];
#pragma unroll
    for (int row_step = 0; row_step < kRowSteps; ++row_step) {
#pragma unroll
      for (int column_step = 0; column_step < kColumnSteps; ++column_step) {
        staged[row_step][column_step] = *reinterpret_cast<const uint4*>(
            gmem_chunk + row_step * gmem_row_step + column_step * kPatchColumns);
      }
    }
#pragma unroll
    for (int row_step = 0; row_step < kRowSteps; ++row_step) {
#pragma unroll
      for (int column_step = 0; column_step < kColumnSteps; ++column_step) {
        *reinterpret_cast<uint4*>(tile + lane.smem_first_chunk + row_step * kSmemRowStep +
                                  column_step * kPatchColumns) = staged[row_step][column_step];
      }
    }
  }
}

// The reverse direction for the epilogue: the kRows x d_head block in `tile` to GMEM with
// 16-byte coalesced stores (8 threads per 128-byte row segment).
template <KernelConfig C, int kRows>
__device__ __forceinline__ void copy_block_to_gmem(typename Shape<C>::Element* gmem_chunk,
                                                   const typename Shape<C>::Element* tile,
                                                   const CopyLane<C>& lane) {
  constexpr int kRowSteps = kRows / Shape<C>::kCopyRows;
  constexpr int kColumnSteps = C.d_head / kPatchColumns;
  constexpr int kSmemRowStep = Shape<C>::kCopyRows * C.d_head;
  const int gmem_row_step = Shape<C>::kCopyRows * lane.gmem_row_stride;

#pragma unroll
  for (int row_step = 0; row_step < kRowSteps; ++row_step) {
#pragma unroll
    for (int column_step = 0; column_step < kColumnSteps; ++column_step) {
      *reinterpret_cast<uint4*>(gmem_chunk + row_step * gmem_row_step +
                                column_step * kPatchColumns) =
          *reinterpret_cast<const uint4*>(tile + lane.smem_first_chunk + row_step * kSmemRowStep +
                                          column_step * kPatchColumns);
    }
  }
}

}  // namespace flashscope::v09
