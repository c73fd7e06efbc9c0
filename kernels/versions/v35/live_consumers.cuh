// Step 34 (docs/versions/34.md): a partial query block runs on the consumers that hold a position,
// and without the mask the partial blocks are scheduled after every whole one.
//
// B_r = 192 divides no power-of-two seq_len, so at d_head 64 without the mask the last block of
// every (sample, head) holds only 64 or 128 rows of positions, and step 33's third (or second and
// third) consumer ran its GEMMs over rows that are never stored. Step 34's consumer whose 64 rows
// all lie past seq_len (or past the packed rows P·g) takes no part in that tile at all: the
// consumers before it pass the GEMM turn round among themselves, and the producer makes its
// releases of the Q, K and V slots on its behalf. No consumer branches inside a tile: a consumer
// that has no rows in a tile leaves the tile loop there, which is only correct because its later
// tiles have none either (below), and the KV loops are step 33's.
//
// Why the order matters. PairedTileScheduler deals tiles b, b + grid, ... in the order (query
// block, head, sample); with 132 CTAs and 3, 6, 11 or 22 blocks a head (N = 512 ... 4096) the grid
// is a multiple of the block count, so CTA b always draws the same query block: a third (or a
// sixth, ...) of the CTAs would draw every partial tile, the others only whole ones, and the
// launch would last as long as those. Ordered whole tiles first and partial ones last, every CTA's
// share ends with at most a few partial tiles, and the cheaper tiles shorten the longest share.
//
// Why leaving the loop is safe. The rings' full barriers are waited on by parity: a consumer that
// skipped a slot's fill and came back later could see the parity of a fill two phases old and read
// the slot early. So a consumer never comes back: the number of live consumers of a CTA's tiles
// never grows along its share. Without the mask every whole block has ceil(P·g / 64) live
// consumers and a partial one at most that many, and the partial blocks come last; under the mask
// (step 24's paired order, step 30's partial block first) only the packed rows count, the same for
// every tile of the launch.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/host_device.hpp"
#include "kernels/common/tile_scheduler.hpp"
#include "kernels/versions/v35/packing.cuh"

namespace flashscope::v35 {

// The tile that PairedTileScheduler's unpaired order hands out as `tile` (its linear index
// query_block + n_query_blocks * (head + n_heads * sample)) is given the tile of that index in
// step 34's order: indices 0 .. whole_tiles - 1 the whole blocks, query block fastest (consecutive
// tiles still share a head's K and V in the L2), then one partial block per (sample, head).
// `reorders`: without the mask, when the last packed block reaches past seq_len; otherwise the
// tile is returned as it is. A function of the scheduler's tile rather than a scheduler of its
// own: it holds no state across tiles, so the consumers' registers (160 at d_head 64, none to
// spare) carry nothing more.
FS_HOST_DEVICE constexpr scheduling::AttentionTile partial_blocks_last(
    const scheduling::AttentionTile& tile, const scheduling::TileSpace& space, bool reorders) {
  if (!reorders || space.n_query_blocks < 2) return tile;
  const int linear =
      tile.query_block + space.n_query_blocks * (tile.head + space.n_heads * tile.sample);
  const int whole_blocks = space.n_query_blocks - 1;
  const int whole_tiles = whole_blocks * space.n_heads * space.batch;
  const bool whole = linear < whole_tiles;
  const int query_block = whole ? linear % whole_blocks : whole_blocks;
  const int head_and_sample = whole ? linear / whole_blocks : linear - whole_tiles;
  return {query_block, head_and_sample % space.n_heads, head_and_sample / space.n_heads};
}

// The consumers that hold a stored row of the tile starting at `first_position`: consumers
// 0 .. live - 1 (rows 0 .. 64·live - 1), at least one. Tile row r is position first_position +
// r / g (packing.cuh), so the rows of positions before seq_len are the first
// (seq_len - first_position) · g, and the rows of every position the first P·g. Under the mask the
// partial block's missing positions are its first rows (step 30), not its last: only the packed
// rows count there.
template <KernelConfig C>
__device__ __forceinline__ int live_consumers(const Packing& packing, int first_position,
                                              int seq_len, bool causal) {
  const int rows_before_end = (seq_len - first_position) * packing.group;
  const int rows = !causal && rows_before_end < packing.rows ? rows_before_end : packing.rows;
  return (rows + kWarpgroupRows - 1) / kWarpgroupRows;
}

// `count` arrivals at once on a ring's empty barrier: the producer's releases on behalf of the
// consumer warps that sit a tile out (count <= 2^20 - 1, PTX ISA mbarrier.arrive, sm_90).
__device__ __forceinline__ void mbarrier_arrive_count(std::uint32_t barrier, std::uint32_t count) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;\n" ::"r"(barrier), "r"(count)
               : "memory");
}

}  // namespace flashscope::v35
