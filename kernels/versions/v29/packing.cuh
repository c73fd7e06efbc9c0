// Grouped-query attention by packing (docs/versions/26.md). A problem has n_heads query heads and
// n_kv_heads K/V heads; the g = n_heads / n_kv_heads query heads of a group read one K/V head
// (query head h reads K/V head h / g). Step 26 packs a group into one tile: a tile is
// (sample, K/V head, packed block), and its B_r rows are P = floor(B_r / g) consecutive query
// positions times the g heads of the group, the head fastest:
//
//   tile row r  <->  query position q0 + r / g,  query head kv_head · g + r % g,  q0 = block · P.
//
// The g heads of a group are adjacent in Q (and O), so one TMA box of (64 columns, g heads,
// P positions, 1 sample) per 64-column sub-tile lands in SMEM as P·g consecutive 128-byte rows in
// exactly this order, swizzled as wgmma reads them: the GEMMs, the softmax and the K/V pipeline
// do not know about the packing. What does: the Q box and its byte count, the per-row query
// position of the causal mask, and the per-row GMEM address of O and of the log-sum-exp.
//
// Rows r >= P·g (when g does not divide B_r) are idle: no box writes them, so the kernel zeroes
// them once (their scores are 0, their softmax finite) and never stores them. g = 1 is step 25's
// tile: P = B_r, no idle row.
#pragma once

#include "kernels/common/config.hpp"
#include "kernels/common/forward_args.hpp"

namespace flashscope::v29 {

// The packing of one launch: the same for every tile.
struct Packing {
  int group;      // g: query heads per K/V head
  int positions;  // P = floor(B_r / g): query positions per tile
  int rows;       // P · g: tile rows that hold a (position, head); the rest are idle

  template <KernelConfig C>
  __host__ __device__ __forceinline__ static Packing of(const ForwardArgs& args) {
    const int group = args.n_heads / args.n_kv_heads;
    const int positions = C.B_r / group;
    return {group, positions, positions * group};
  }
  // Packed blocks per (sample, K/V head): the query-block extent of the tile space.
  __host__ __device__ __forceinline__ int blocks(int seq_len) const {
    return (seq_len + positions - 1) / positions;
  }
};

// A thread's two accumulator rows (g and g + 8 of its warp's 16, lane / 4 = g) in packing terms,
// computed once per thread: the only divisions by the run-time g are here, outside every loop.
// Per tile, a row's query position is q0 + position_offset and its query head
// kv_head · g + head_offset.
struct PackedRows {
  int position_offset[2];  // r / g
  int head_offset[2];      // r % g
  bool used[2];            // r < P · g: the row holds a (position, head)

  __device__ __forceinline__ PackedRows(const Packing& packing, int first_row) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = first_row + 8 * half;
      position_offset[half] = row / packing.group;
      head_offset[half] = row - position_offset[half] * packing.group;
      used[half] = row < packing.rows;
    }
  }
};

}  // namespace flashscope::v29
