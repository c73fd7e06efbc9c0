// The causal mask of step 23 (docs/versions/23.md) on step 26's packed tiles
// (docs/versions/26.md). Query position i attends to keys j <= i (the lower triangle, diagonal
// included; Q and K have one length, so bottom-right and top-left alignment agree). A tile holds
// the P query positions q0 .. q0 + P - 1 (each for the g heads of a group, packing.cuh), and with
// KV blocks of B_c keys its blocks fall in three classes:
//   - blocks wholly above the diagonal (every key after the tile's last position): never loaded,
//     never computed -- the KV loop ends after block (q0 + P - 1) / B_c;
//   - blocks that cross the diagonal (some key after the tile's first position q0): computed,
//     then masked here, element by element, against each row's own position q0 + r / g;
//   - blocks wholly below it: computed exactly as without the mask.
// At g = 1 this is step 25's mask (P = B_r, a row's position is q0 + r).
// The KV loop runs backwards (spec §4.13), so the crossing blocks are the tile's first ones.
#pragma once

#include "kernels/common/config.hpp"
#include "kernels/versions/v35/fragments.cuh"
#include "kernels/versions/v35/layout.cuh"

namespace flashscope::v35 {

// The score a masked position gets. Not -inf: a row of the tile can have no visible key in its
// first (diagonal) block -- e.g. at B_c = 64 the first block holds keys 64-127 of the tile and
// consumer 0's rows are 0-63; packed, any row whose position precedes the block's first key --
// and the online softmax would then compute exp(-inf - (-inf)) = NaN.
// A finite power of two keeps that row's arithmetic exact: its maximum is kMaskedScore, scaling it
// by the softmax scale is exact, so exp2(S·scale - max·scale) = 1 for every masked position, and
// the first block with a visible key rescales the row's sum and its O by exp2((kMaskedScore -
// m)·scale), which is exactly 0. A row with a visible key never lets a masked position contribute:
// exp2 of about -10^29 is 0. Step 30: a row at a negative position (the first block of the
// end-aligned grid) sees no key in any block; it stays at kMaskedScore throughout, finite, and is
// never stored.
inline constexpr float kMaskedScore = -0x1p100f;

// The KV blocks a tile of the query positions first_position .. first_position + positions - 1
// needs, and how many of them (the first ones processed) cross the diagonal. Without the mask:
// every block, none masked. Positions past seq_len (the last packed block's) only make the range
// longer than its stored rows need; it is clamped to the n_kv_blocks that exist. Step 30: under
// the mask the grid ends at seq_len (Packing::first_position), so the clamp never binds; the
// partial block is the first one, whose positions start below 0.
struct CausalBlockRange {
  int blocks;         // blocks 0 .. blocks - 1 are loaded and computed
  int masked_blocks;  // blocks blocks - masked_blocks .. blocks - 1 need the element mask
};

template <KernelConfig C>
__host__ __device__ __forceinline__ CausalBlockRange kv_blocks_of(int first_position, int positions,
                                                                  int n_kv_blocks, bool causal) {
  if (!causal) return {n_kv_blocks, 0};
  const int last_position = first_position + positions - 1;
  const int up_to_diagonal = last_position / C.B_c + 1;
  const int blocks = up_to_diagonal < n_kv_blocks ? up_to_diagonal : n_kv_blocks;
  // Block b crosses the diagonal when its last key b·B_c + B_c - 1 exceeds the first position.
  // Step 30: the first block of an end-aligned grid starts at a negative position (down to
  // 1 - P, packing.cuh), and every block it needs crosses: its rows before 0 see no key at all.
  // (Division truncates towards zero, so a negative position is clamped first.)
  const int first_crossing = (first_position > 0 ? first_position : 0) / C.B_c;
  return {blocks, blocks - first_crossing};
}

// Sets S to kMaskedScore where the key follows the row's query position. S is a consumer warp's
// accumulator tile of KV block `kv_block`: c0, c1 in row g, c2, c3 in row g + 8 (g = lane / 4),
// columns 8n + 2t and 8n + 2t + 1 of n-tile n (t = lane % 4). `row_positions` are the query
// positions of the thread's rows g and g + 8: packed, row g + 8 is not 8 positions after row g
// (it is (r + 8) / g against r / g), so each row has its own. The warp's accumulators are one
// 16-row m-tile (Shape::kMTiles = 1).
template <KernelConfig C>
__device__ __forceinline__ void apply_causal_mask(
    Accumulators<Shape<C>::kMTiles, Shape<C>::kScoreNTiles>& S, const int (&row_positions)[2],
    int kv_block, int lane) {
  static_assert(Shape<C>::kMTiles == 1, "two rows per thread: one m-tile");
  // key - position of the thread's first element in each row (column 2t); every other element
  // adds a compile-time column offset.
  const int first_key = kv_block * C.B_c + 2 * (lane % 4);
  const int key_minus_position[2] = {first_key - row_positions[0], first_key - row_positions[1]};
#pragma unroll
  for (int n = 0; n < Shape<C>::kScoreNTiles; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (key_minus_position[i / 2] + 8 * n + (i % 2) > 0) S[0][n][i] = kMaskedScore;
    }
  }
}

}  // namespace flashscope::v35
