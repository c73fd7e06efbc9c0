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
#include "kernels/versions/v26/layout.cuh"

namespace flashscope::v26 {

// Where a tile's rows come from: rows [first_row, first_row + kRows) of one (sample, head).
struct TileCoordinates {
  int first_row;
  int head;
  int sample;
};

// Bytes of one tile of kRows rows: what the tile's full barrier is told to expect.
template <KernelConfig C, int kRows>
inline constexpr std::uint32_t kTileBytes = kRows* C.d_head* kElementBytes;

// Issues the tile's boxes; their bytes complete transactions on `full_barrier`, whose expected
// byte count the pipeline announced (MbarrierPipeline::producer_expect_bytes, kTileBytes).
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

}  // namespace flashscope::v26
