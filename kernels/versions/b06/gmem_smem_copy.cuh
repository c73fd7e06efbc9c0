// GMEM <-> SMEM block copies of backward step B5, by the Tensor Memory Accelerator: one thread
// issues a whole tile as one box per 64-column sub-tile (cp.async.bulk.tensor); the TMA unit
// computes every address from the tensor map, writes the sub-tile with the 128-byte swizzle wgmma
// reads, and completes the bytes as transactions on the tile's mbarrier. Rows past the sequence's
// end are zero-filled on the way in (the map holds the real extents) and dropped on the way out,
// so any seq_len runs: a zero K or V row adds nothing to dQ, a zero Q or dO row nothing to dK or
// dV. The fp32 vectors L·log2(e) and D come from the workspace by the bulk-copy engine.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx_hopper.cuh"
#include "kernels/versions/b06/layout.cuh"

namespace flashscope::b06 {

// The maps the main kernel receives as one __grid_constant__: Q and dO in boxes of B_r rows, K,
// V, dK and dV in boxes of B_c rows.
struct BackwardTensorMaps {
  CUtensorMap q, d_o, k, v, d_k, d_v;
};

// Where a tile's rows come from: rows [first_row, first_row + kRows) of one (sample, head).
struct TileCoordinates {
  int first_row;
  int head;
  int sample;
};

// Issues a tile of kRows rows as d_head / 64 boxes whose bytes complete on `full_barrier` (the
// caller announced them with one mbarrier_arrive_expect_tx).
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

// Stores a tile of kRows rows to GMEM rows [to.first_row, to.first_row + kRows) (the rows past
// the tensor's end are not written) as one bulk group of this thread. The rows must have been
// written and published to the async proxy (fence.proxy.async + barrier).
template <KernelConfig C, int kRows>
__device__ __forceinline__ void store_tile(const CUtensorMap* map, std::uint32_t tile,
                                           const TileCoordinates& to) {
  constexpr int kSubTiles = C.d_head / kSubTileColumns;
#pragma unroll
  for (int sub_tile = 0; sub_tile < kSubTiles; ++sub_tile) {
    ptx::tma_store_4d(map, tile + sub_tile * kRows * kSubTileRowBytes, sub_tile * kSubTileColumns,
                      to.head, to.first_row, to.sample);
  }
}

}  // namespace flashscope::b06
