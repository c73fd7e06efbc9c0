// The causal mask of step 23 (docs/versions/23.md). Query row i attends to keys j <= i (the
// lower triangle, diagonal included; Q and K have one length, so bottom-right and top-left
// alignment agree). With B_r = 128 query rows per tile and KV blocks of B_c keys, a tile's KV
// blocks fall in three classes:
//   - blocks wholly above the diagonal (every key after the tile's last row): never loaded, never
//     computed -- the KV loop of query block q ends after block ceil((q + 1) · B_r / B_c) - 1;
//   - blocks that cross the diagonal (some key after the tile's first row): computed, then masked
//     here, element by element;
//   - blocks wholly below it: computed exactly as without the mask.
// The KV loop runs backwards (spec §4.13), so the crossing blocks are the tile's first ones.
#pragma once

#include "kernels/common/config.hpp"
#include "kernels/versions/v26/fragments.cuh"
#include "kernels/versions/v26/layout.cuh"

namespace flashscope::v26 {

// The score a masked position gets. Not -inf: a row of the tile can have no visible key in its
// first (diagonal) block -- e.g. at B_c = 64 the first block holds keys 64-127 of the tile and
// consumer 0's rows are 0-63 -- and the online softmax would then compute exp(-inf - (-inf)) = NaN.
// A finite power of two keeps that row's arithmetic exact: its maximum is kMaskedScore, scaling it
// by the softmax scale is exact, so exp2(S·scale - max·scale) = 1 for every masked position, and
// the first block with a visible key rescales the row's sum and its O by exp2((kMaskedScore -
// m)·scale), which is exactly 0. A row with a visible key never lets a masked position contribute:
// exp2 of about -10^29 is 0.
inline constexpr float kMaskedScore = -0x1p100f;

// The KV blocks query block `query_block` needs, and how many of them (the first ones processed)
// cross the diagonal. Without the mask: every block, none masked.
struct CausalBlockRange {
  int blocks;         // blocks 0 .. blocks - 1 are loaded and computed
  int masked_blocks;  // blocks blocks - masked_blocks .. blocks - 1 need the element mask
};

template <KernelConfig C>
__host__ __device__ __forceinline__ CausalBlockRange kv_blocks_of(int query_block, int n_kv_blocks,
                                                                  bool causal) {
  if (!causal) return {n_kv_blocks, 0};
  const int first_query = query_block * C.B_r;
  const int last_query = first_query + C.B_r - 1;
  const int up_to_diagonal = last_query / C.B_c + 1;
  const int blocks = up_to_diagonal < n_kv_blocks ? up_to_diagonal : n_kv_blocks;
  // Block b crosses the diagonal when its last key b·B_c + B_c - 1 exceeds the first query row.
  const int first_crossing = first_query / C.B_c;
  return {blocks, blocks - first_crossing};
}

// Sets S to kMaskedScore where the key follows the query. S is a consumer warp's accumulator tile
// of KV block `kv_block`: c0, c1 in row g, c2, c3 in row g + 8 of each 16-row m-tile (g = lane /
// 4), columns 8n + 2t and 8n + 2t + 1 of n-tile n (t = lane % 4). `first_query` is the global query
// row of the warp's first accumulator row.
template <KernelConfig C>
__device__ __forceinline__ void apply_causal_mask(
    Accumulators<Shape<C>::kMTiles, Shape<C>::kScoreNTiles>& S, int first_query, int kv_block,
    int lane) {
  // key - query of the thread's first element (row g, column 2t); every other element adds a
  // compile-time column offset and subtracts a compile-time row offset.
  const int key_minus_query = kv_block * C.B_c + 2 * (lane % 4) - (first_query + lane / 4);
#pragma unroll
  for (int m = 0; m < Shape<C>::kMTiles; ++m) {
#pragma unroll
    for (int n = 0; n < Shape<C>::kScoreNTiles; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int offset = 8 * n + (i % 2) - (16 * m + 8 * (i / 2));
        if (key_minus_query + offset > 0) S[m][n][i] = kMaskedScore;
      }
    }
  }
}

}  // namespace flashscope::v26
