// Step 33 (docs/versions/33.md): the partial query block of every (sample, K/V head) runs after
// every whole one, without the mask. A tile of B_r = 192 rows splits no power-of-two seq_len, so
// the last block of each head is partial (64 or 128 of its 192 rows hold positions), and step 33's
// kernel lets the consumers whose 64 rows are all past seq_len pass their GEMM turns: that tile
// costs less than a whole one. PairedTileScheduler (kernels/common/tile_scheduler.hpp) deals tiles
// b, b + grid, ... in the order (query block, head, sample); with 132 CTAs and 3, 6, 11 or 22
// blocks a head (N = 512 ... 4096) the grid is a multiple of the block count, so CTA b always
// draws the same query block, a third (or a sixth, ...) of the CTAs would draw every partial
// tile and the others every whole one, and the launch would still last as long as the CTAs with
// whole tiles only. Ordered whole tiles first, partial ones last, every CTA's share ends with at
// most one or two partial tiles, and the cheaper tiles shorten the longest share.
//
// Under the mask step 24's paired schedule is kept as it is (its first block, step 30's partial
// one, is already the lightest of its head), and so it is when seq_len is a multiple of P.
#pragma once

#include "kernels/common/host_device.hpp"
#include "kernels/common/tile_scheduler.hpp"

namespace flashscope::v33 {

// The tile that PairedTileScheduler's unpaired order hands out as `tile` (its linear index
// query_block + n_query_blocks * (head + n_heads * sample)) is given the tile of that index in
// step 33's order: indices 0 .. whole_tiles - 1 the whole blocks, query block fastest (consecutive
// tiles still share a head's K and V in the L2), then one partial block per (sample, head).
// `reorders`: without the mask, when the last packed block reaches past seq_len; otherwise the
// tile is returned as it is (the paired order under the mask is step 24's). A function of the
// scheduler's tile rather than a scheduler of its own: it holds no state across tiles, so the
// consumers' registers (160, the kernel at d_head 64 has none to spare) carry nothing more.
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

}  // namespace flashscope::v33
