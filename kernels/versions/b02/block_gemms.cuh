// The five GEMMs of one (KV block, query block) step of the backward (backward-track.md §1), each
// from one warp's point of view (the warp roles are in layout.cuh):
//   Sᵀ  = K·Qᵀ        and  dPᵀ = V·dOᵀ   (keys x queries, reduction over d_head)
//   dV += Pᵀ·dO       and  dK += dSᵀ·Q   (keys x d_head, reduction over the query block)
//   dQ  = dS·K                            (queries x d_head, reduction over the KV block)
// Computing the scores transposed (a row per key) makes P and dS come out with the rows dV and dK
// need, so all of a warp's four key-side GEMMs share its keys. Every ldmatrix lane passed in
// already points at the warp's region (fragments.cuh), so all offsets here are compile-time.
#pragma once

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/b02/fragments.cuh"
#include "kernels/versions/b02/layout.cuh"

namespace flashscope::b02 {

// Sᵀ (or dPᵀ) for the warp's 32 keys against its B_r / 2 query rows: `keys` is K (or V) read
// row-major as the A operand, `queries` Q (or dO) read paired as the B operand, both along
// d_head. The fragment loads are double-buffered (mma_double_buffer_loads, the forward's step 5):
// slice s + 1's ldmatrix is issued before slice s's mmas, so its latency hides behind them
// instead of stalling the warp at every slice. Fully unrolled, every buffer index is a
// compile-time constant.
template <KernelConfig C>
__device__ __forceinline__ void compute_transposed_scores(
    Accumulators<Shape<C>::kKeyMTiles, Shape<C>::kScoreNTiles>& S,
    const LdmatrixLane<C, C.B_c>& keys, const LdmatrixLane<C, C.B_r>& queries) {
  using Sh = Shape<C>;
  std::uint32_t a[2][Sh::kKeyMTiles][4];
  BPair b[2][Sh::kScoreNTiles / 2];
  auto load_slice = [&](int slice, int buffer) {
#pragma unroll
    for (int m = 0; m < Sh::kKeyMTiles; ++m)
      load_A<C>(a[buffer][m], keys, 16 * m, slice);
#pragma unroll
    for (int pair = 0; pair < Sh::kScoreNTiles / 2; ++pair)
      load_B_pair<C>(b[buffer][pair], queries, 16 * pair, slice);
  };
  load_slice(0, 0);
#pragma unroll
  for (int slice = 0; slice < Sh::kDSlices; ++slice) {
    if (slice + 1 < Sh::kDSlices) load_slice(slice + 1, (slice + 1) % 2);
    const int buffer = slice % 2;
#pragma unroll
    for (int pair = 0; pair < Sh::kScoreNTiles / 2; ++pair) {
#pragma unroll
      for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int m = 0; m < Sh::kKeyMTiles; ++m)
          ptx::mma_m16n8k16<C.dtype>(S[m][2 * pair + n], a[buffer][m], b[buffer][pair][n][0],
                                     b[buffer][pair][n][1]);
      }
    }
  }
}

// dV (or dK) += Pᵀ·dO (or dSᵀ·Q) for the warp's 32 keys and d_head / 2 columns, over query slices
// [kFirstSlice, kFirstSlice + kSlices) of the block: `probabilities` is the P (or dS) tile, a row
// per key, read row-major as the A operand; `rows` is dO (or Q) read transposed as the B operand,
// the reduction running down its rows.
template <KernelConfig C, int kFirstSlice, int kSlices>
__device__ __forceinline__ void accumulate_gradient_from_smem(
    Accumulators<Shape<C>::kKeyMTiles, Shape<C>::kGradientNTiles>& G,
    const LdmatrixLane<C, C.B_c>& probabilities, const LdmatrixLane<C, C.B_r>& rows) {
  using Sh = Shape<C>;
#pragma unroll
  for (int slice = kFirstSlice; slice < kFirstSlice + kSlices; ++slice) {
    std::uint32_t a[Sh::kKeyMTiles][4];
#pragma unroll
    for (int m = 0; m < Sh::kKeyMTiles; ++m)
      load_A<C>(a[m], probabilities, 16 * m, slice);
#pragma unroll
    for (int pair = 0; pair < Sh::kGradientNTiles / 2; ++pair) {
      BPair b;
      load_B_pair_transposed<C>(b, rows, 16 * slice, pair);
#pragma unroll
      for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int m = 0; m < Sh::kKeyMTiles; ++m)
          ptx::mma_m16n8k16<C.dtype>(G[m][2 * pair + n], a[m], b[n][0], b[n][1]);
      }
    }
  }
}

// dV (or dK) += Pᵀ·dO (or dSᵀ·Q) over the warp's own B_r / 2 queries, with P (or dS) straight
// from the registers the warp computed it in (convert_to_A_fragments): no shared-memory round
// trip for the half of the reduction the warp owns. `rows` is dO (or Q) at the warp's own query
// rows, read transposed as the B operand.
template <KernelConfig C>
__device__ __forceinline__ void accumulate_gradient_from_registers(
    Accumulators<Shape<C>::kKeyMTiles, Shape<C>::kGradientNTiles>& G,
    const AFragments<Shape<C>::kKeyMTiles, Shape<C>::kHalfQuerySlices>& probabilities,
    const LdmatrixLane<C, C.B_r>& rows) {
  using Sh = Shape<C>;
#pragma unroll
  for (int slice = 0; slice < Sh::kHalfQuerySlices; ++slice) {
#pragma unroll
    for (int pair = 0; pair < Sh::kGradientNTiles / 2; ++pair) {
      BPair b;
      load_B_pair_transposed<C>(b, rows, 16 * slice, pair);
#pragma unroll
      for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int m = 0; m < Sh::kKeyMTiles; ++m)
          ptx::mma_m16n8k16<C.dtype>(G[m][2 * pair + n], probabilities[m][slice], b[n][0], b[n][1]);
      }
    }
  }
}

// Chunk kChunk of dQ = dS·K for the warp's B_r / 2 query rows and kDqChunkColumns of its d_head
// columns, reduced over the whole KV block. dS (a row per key) is read transposed through the
// paired lanes, which yields the A operand of the query rows; K is read transposed as the B
// operand, the reduction running down its rows. Double-buffered like compute_transposed_scores:
// the next key slice's fragments are loaded before this slice's mmas.
template <KernelConfig C, int kChunk>
__device__ __forceinline__ void compute_dq_chunk(
    Accumulators<Shape<C>::kDqMTiles, Shape<C>::kDqChunkNTiles>& dQ,
    const LdmatrixLane<C, C.B_c>& dS_paired, const LdmatrixLane<C, C.B_c>& keys) {
  using Sh = Shape<C>;
  std::uint32_t a[2][Sh::kDqMTiles][4];
  BPair b[2][Sh::kDqChunkNTiles / 2];
  auto load_slice = [&](int slice, int buffer) {
#pragma unroll
    for (int m = 0; m < Sh::kDqMTiles; ++m)
      load_A_transposed<C>(a[buffer][m], dS_paired, 16 * slice, m);
#pragma unroll
    for (int pair = 0; pair < Sh::kDqChunkNTiles / 2; ++pair)
      load_B_pair_transposed<C>(b[buffer][pair], keys, 16 * slice,
                                kChunk * Sh::kDqChunkNTiles / 2 + pair);
  };
  load_slice(0, 0);
#pragma unroll
  for (int slice = 0; slice < Sh::kKeySlices; ++slice) {
    if (slice + 1 < Sh::kKeySlices) load_slice(slice + 1, (slice + 1) % 2);
    const int buffer = slice % 2;
#pragma unroll
    for (int pair = 0; pair < Sh::kDqChunkNTiles / 2; ++pair) {
#pragma unroll
      for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int m = 0; m < Sh::kDqMTiles; ++m)
          ptx::mma_m16n8k16<C.dtype>(dQ[m][2 * pair + n], a[buffer][m], b[buffer][pair][n][0],
                                     b[buffer][pair][n][1]);
      }
    }
  }
}

}  // namespace flashscope::b02
