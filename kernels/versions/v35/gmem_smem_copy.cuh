// GMEM <-> SMEM block copies by the Tensor Memory Accelerator (hopper-track.md §3, step 18). One
// thread issues a whole tile as one box per 64-column sub-tile (cp.async.bulk.tensor); the TMA
// unit computes every address from the tensor map, writes the sub-tile with the 128-byte swizzle
// wgmma reads, and completes the bytes as transactions on the tile's mbarrier. No thread computes
// a GMEM or SMEM address per chunk any more, and the static GMEM stride of step 16 is no longer
// needed: the map holds the real strides.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx_hopper.cuh"
#include "kernels/versions/v35/layout.cuh"

namespace flashscope::v35 {

// Where a tile's rows come from: the box of the map whose first sequence position is first_row,
// first head `head`, in one sample. A K or V box is B_c rows of one head; step 26's Q box is
// P positions x g heads (the map's box[2] and box[1], packing.cuh), starting at the group's first
// query head.
struct TileCoordinates {
  int first_row;
  int head;
  int sample;
};

// Bytes of one tile of kRows rows: what the tile's full barrier is told to expect.
template <KernelConfig C, int kRows>
inline constexpr std::uint32_t kTileBytes = kRows* C.d_head* kElementBytes;

// Bytes of a packed Q tile of `rows` = P·g rows: each 64-column box writes P·g rows of 128 bytes
// at the start of its sub-tile. The count is the whole box's even where the box reaches past
// seq_len (the last packed block, when P does not divide seq_len): the TMA unit writes those
// elements too, as zeros, and they complete their bytes on the barrier like the others.
template <KernelConfig C>
__device__ __forceinline__ std::uint32_t packed_tile_bytes(int rows) {
  return static_cast<std::uint32_t>(rows) * C.d_head * kElementBytes;
}

// Issues the tile's boxes; their bytes complete transactions on `full_barrier`, whose expected
// byte count the pipeline announced (MbarrierPipeline::producer_expect_bytes, kTileBytes or
// packed_tile_bytes). kRows is the SMEM tile's row count (sub-tile h starts at row h·kRows), which
// a packed Q box may not fill.
template <KernelConfig C, int kRows>
__device__ __forceinline__ void load_tile(std::uint32_t tile, const CUtensorMap* map,
                                          std::uint32_t full_barrier, const TileCoordinates& from) {
  constexpr int kSubTiles = C.d_head / kSubTileColumns;
#pragma unroll
  for (int sub_tile = 0; sub_tile < kSubTiles; ++sub_tile) {
    ptx::tma_load_4d(tile + sub_tile * kRows * kSubTileRowBytes, map, full_barrier,
                     sub_tile * kSubTileColumns, from.head, from.first_row, from.sample);
  }
}

}  // namespace flashscope::v35
