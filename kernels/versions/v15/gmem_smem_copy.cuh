// CTA-cooperative GMEM <-> SMEM block copies (spec §3.4, §4.8). Every thread takes part in every
// block copy, so whatever a warp reads after a copy (Q, K, V, or the O rows on the way out)
// needs a CTA barrier first.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/v15/layout.cuh"

namespace flashscope::v15 {

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
// So in SMEM every step is a compile-time constant; in GMEM all but the row stride are.
template <KernelConfig C>
struct CopyLane {
  __device__ __forceinline__ CopyLane(int tid, std::int64_t gmem_row_stride)
      : smem_first_chunk(sub_tile_offset<C>(tid / 8, kChunkElements * (tid % 8))),
        gmem_first_chunk(tid / 8 * gmem_row_stride + kChunkElements * (tid % 8)),
        gmem_row_stride(gmem_row_stride) {}

  int smem_first_chunk;           // swizzled element offset of the thread's first chunk in any tile
  std::int64_t gmem_first_chunk;  // element offset of that chunk from a GMEM block's first element
  std::int64_t gmem_row_stride;   // elements between sequence positions in GMEM
};

// Copies block `block` of the kRows-row blocks of a (sample, head) sequence that starts at
// `gmem_sequence` into `tile` (spec §4.12: addressed by block number, 64-bit offsets). Always
// cp.async from step 15 on (async_copy is ignored); the caller commits the copies as one group.
template <KernelConfig C, int kRows>
__device__ __forceinline__ void copy_block_to_smem(typename Shape<C>::Element* tile,
                                                   const typename Shape<C>::Element* gmem_sequence,
                                                   int block, const CopyLane<C>& lane) {
  constexpr int kRowSteps = kRows / Shape<C>::kCopyRows;
  constexpr int kSubTiles = C.d_head / kSubTileColumns;
  constexpr int kSmemRowStep = Shape<C>::kCopyRows * kSubTileColumns;
  constexpr int kSmemSubTileStep = kRows * kSubTileColumns;
  const std::int64_t gmem_row_step = Shape<C>::kCopyRows * lane.gmem_row_stride;
  const typename Shape<C>::Element* const gmem_chunk =
      gmem_sequence + block * kRows * lane.gmem_row_stride + lane.gmem_first_chunk;

#pragma unroll
  for (int sub_tile = 0; sub_tile < kSubTiles; ++sub_tile) {
#pragma unroll
    for (int row_step = 0; row_step < kRowSteps; ++row_step) {
      ptx::cp_async_16(
          tile + lane.smem_first_chunk + sub_tile * kSmemSubTileStep + row_step * kSmemRowStep,
          gmem_chunk + row_step * gmem_row_step + sub_tile * kSubTileColumns);
    }
  }
}

// The reverse direction for the epilogue: the kRows x d_head block in `tile` to block `block`
// of the GMEM sequence, with 16-byte coalesced stores (8 threads per 128-byte row segment). The
// stores are st.relaxed.sys.global.L1::no_allocate.b128 (spec §4.14): O is written once and
// never read back by this kernel, so it need not take L1 lines.
template <KernelConfig C, int kRows>
__device__ __forceinline__ void copy_block_to_gmem(typename Shape<C>::Element* gmem_sequence,
                                                   int block,
                                                   const typename Shape<C>::Element* tile,
                                                   const CopyLane<C>& lane) {
  constexpr int kRowSteps = kRows / Shape<C>::kCopyRows;
  constexpr int kSubTiles = C.d_head / kSubTileColumns;
  constexpr int kSmemRowStep = Shape<C>::kCopyRows * kSubTileColumns;
  constexpr int kSmemSubTileStep = kRows * kSubTileColumns;
  const std::int64_t gmem_row_step = Shape<C>::kCopyRows * lane.gmem_row_stride;
  typename Shape<C>::Element* const gmem_chunk =
      gmem_sequence + block * kRows * lane.gmem_row_stride + lane.gmem_first_chunk;

#pragma unroll
  for (int sub_tile = 0; sub_tile < kSubTiles; ++sub_tile) {
#pragma unroll
    for (int row_step = 0; row_step < kRowSteps; ++row_step) {
      ptx::st_global_relaxed_sys_no_allocate_b128(
          gmem_chunk + row_step * gmem_row_step + sub_tile * kSubTileColumns,
          *reinterpret_cast<const uint4*>(tile + lane.smem_first_chunk +
                                          sub_tile * kSmemSubTileStep + row_step * kSmemRowStep));
    }
  }
}

}  // namespace flashscope::v15
