// Grouped-query attention by packing (docs/versions/26.md). A problem has n_heads query heads and
// n_kv_heads K/V heads; the g = n_heads / n_kv_heads query heads of a group read one K/V head
// (query head h reads K/V head h / g). Step 26 packs a group into one tile: a tile is
// (sample, K/V head, packed block), and its B_r rows are P = floor(B_r / g) consecutive query
// positions times the g heads of the group, the head fastest:
//
//   tile row r  <->  query position q0 + r / g,  query head kv_head · g + r % g,  q0 = block · P
//   (step 30: q0 = block · P - s under the mask, Packing::first_position).
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

namespace flashscope::v35 {

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
  // Step 30: the first query position of packed block `query_block`. Without the mask the grid
  // starts at position 0 (step 26's), and when P does not divide seq_len the LAST block reaches
  // past seq_len. Under the mask that block is the heaviest of its head (it needs every KV block),
  // so the grid is aligned to the sequence's END instead: it starts s = blocks · P - seq_len
  // positions before 0, the last block ends exactly at seq_len - 1, and the partial block is the
  // FIRST one, the lightest (its P - s real positions need ceil((P - s) / B_c) KV blocks). Its
  // rows at negative positions are zero-filled by TMA (a box may start before the tensor), masked
  // against every key and never stored, as rows past seq_len were.
  __host__ __device__ __forceinline__ int first_position(int query_block, int seq_len,
                                                         bool causal) const {
    const int shift = causal ? blocks(seq_len) * positions - seq_len : 0;
    return query_block * positions - shift;
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

}  // namespace flashscope::v35
