// CTA-cooperative GMEM <-> SMEM block copies (spec §3.4, §4.8). Every thread takes part in every
// block copy, so whatever a warp reads after a copy (Q, K, V, or the O rows on the way out)
// needs a CTA barrier first.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/v17/layout.cuh"

namespace flashscope::v17 {

inline constexpr int kChunkElements = 8;  // 16 bytes of 16-bit elements

// cp.async groups are committed and waited for unconditionally (spec §4.10). With plain copies
// the groups are empty, which is legal, and the copies have completed when the thread moves on.
__device__ __forceinline__ void commit_copies() {
  ptx::cp_async_commit();
}

// Waits until at most kPending committed block copies are in flight.
template <int kPending>
__device__ __forceinline__ void wait_for_copies() {
  ptx::cp_async_wait<kPending>();
}

// Where this thread's chunks of every block copy lie, computed once per thread (spec §4.8,
// §4.15). Thread tid moves row tid / 8 and 16-byte chunk tid % 8 of each kCopyRows-row patch of
// every 64-column sub-tile. Every other chunk it moves is a fixed step away: kCopyRows rows
// further (a multiple of 8, so row mod 8 and the swizzle are unchanged) or one sub-tile further.
// The GMEM row stride is the compile-time kGmemRowStride (spec §4.16), so every step, in SMEM
// and in GMEM, is a compile-time constant.
template <KernelConfig C, int kGmemRowStride>
struct CopyLane {
  __device__ __forceinline__ explicit CopyLane(int tid)
      : smem_first_chunk(sub_tile_offset<C>(tid / 8, kChunkElements * (tid % 8))),
        gmem_first_chunk(tid / 8 * kGmemRowStride + kChunkElements * (tid % 8)) {}

  int smem_first_chunk;  // swizzled element offset of the thread's first chunk in any tile
  int gmem_first_chunk;  // element offset of that chunk from a GMEM block's first element
};

// Copies block `block` of the kRows-row blocks of a (sample, head) sequence that starts at
// `gmem_sequence` into `tile` (spec §4.12: addressed by block number, 64-bit offsets). Always
// cp.async from step 15 on (async_copy is ignored); the caller commits the copies as one group.
template <KernelConfig C, int kRows, int kGmemRowStride>
__device__ __forceinline__ void copy_block_to_smem(typename Shape<C>::Element* tile,
                                                   const typename Shape<C>::Element* gmem_sequence,
                                                   int block,
                                                   const CopyLane<C, kGmemRowStride>& lane) {
  constexpr int kRowSteps = kRows / Shape<C>::kCopyRows;
  constexpr int kSubTiles = C.d_head / kSubTileColumns;
  constexpr int kSmemRowStep = Shape<C>::kCopyRows * kSubTileColumns;
  constexpr int kSmemSubTileStep = kRows * kSubTileColumns;
  constexpr int kGmemRowStep = Shape<C>::kCopyRows * kGmemRowStride;
  const typename Shape<C>::Element* const gmem_chunk =
      gmem_sequence + block * std::int64_t{kRows * kGmemRowStride} + lane.gmem_first_chunk;

#pragma unroll
  for (int sub_tile = 0; sub_tile < kSubTiles; ++sub_tile) {
#pragma unroll
    for (int row_step = 0; row_step < kRowSteps; ++row_step) {
      ptx::cp_async_16(
          tile + lane.smem_first_chunk + sub_tile * kSmemSubTileStep + row_step * kSmemRowStep,
          gmem_chunk + row_step * kGmemRowStep + sub_tile * kSubTileColumns);
    }
  }
}

// The reverse direction for the epilogue: the kRows x d_head block in `tile` to block `block`
// of the GMEM sequence, with 16-byte coalesced stores (8 threads per 128-byte row segment). The
// stores are st.relaxed.sys.global.L1::no_allocate.b128 (spec §4.14): O is written once and
// never read back by this kernel, so it need not take L1 lines.
template <KernelConfig C, int kRows, int kGmemRowStride>
__device__ __forceinline__ void copy_block_to_gmem(typename Shape<C>::Element* gmem_sequence,
                                                   int block,
                                                   const typename Shape<C>::Element* tile,
                                                   const CopyLane<C, kGmemRowStride>& lane) {
  constexpr int kRowSteps = kRows / Shape<C>::kCopyRows;
  constexpr int kSubTiles = C.d_head / kSubTileColumns;
  constexpr int kSmemRowStep = Shape<C>::kCopyRows * kSubTileColumns;
  constexpr int kSmemSubTileStep = kRows * kSubTileColumns;
  constexpr int kGmemRowStep = Shape<C>::kCopyRows * kGmemRowStride;
  typename Shape<C>::Element* const gmem_chunk =
      gmem_sequence + block * std::int64_t{kRows * kGmemRowStride} + lane.gmem_first_chunk;

#pragma unroll
  for (int sub_tile = 0; sub_tile < kSubTiles; ++sub_tile) {
#pragma unroll
    for (int row_step = 0; row_step < kRowSteps; ++row_step) {
      ptx::st_global_relaxed_sys_no_allocate_b128(
          gmem_chunk + row_step * kGmemRowStep + sub_tile * kSubTileColumns,
          *reinterpret_cast<const uint4*>(tile + lane.smem_first_chunk +
                                          sub_tile * kSmemSubTileStep + row_step * kSmemRowStep));
    }
  }
}

}  // namespace flashscope::v17
