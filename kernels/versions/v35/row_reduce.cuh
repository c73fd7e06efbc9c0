// Step 35: a thread's part of a row reduction as a tree. The FP8 softmax of steps 28-34
// (Fp8OnlineSoftmax) folded a thread's 2 · n-tiles scores of a row into one running value, one
// n-tile after the other: ptxas emits that as a chain of dependent FMNMX (the row maximum; 17 deep
// a row at B_c = 128 in step 34's SASS) and one of dependent FADD (the row sum, 16 deep). Each
// link waits for the previous one's result, so the softmax's first instructions after the S wait
// are a long dependent chain per row (docs/versions/33.md's PC sampling: 14.1 % of the FP8
// consumers' samples). Combined pairwise, the same 2k - 1 operations have a depth of
// ceil(log2(2k)): 5 at B_c = 128, 4 at 64. The maximum is the same value (max is exact, and a
// masked -inf stays the smallest); the sum is rounded in another order (pairwise, whose error
// bound is the smaller one). The 16-bit OnlineSoftmax keeps step 34's chains: with the same tree
// ptxas spilled 8 bytes in its d_head 64, B_r = 192 kernel at 160 registers (docs/versions/35.md).
#pragma once

namespace flashscope::v35 {

struct MaxOf {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

struct SumOf {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

// One level of the tree over values[0 .. kLive), then the next level over the ceil(kLive / 2)
// results: neighbours first (values[2i] with values[2i + 1]: a fragment's two columns, then
// neighbouring n-tiles). A template recursion rather than a loop over the width, so that every
// index is a compile-time constant and the array stays in registers.
template <int kWidth, int kLive, typename Combine>
__device__ __forceinline__ float tree_reduce_live(float (&values)[kWidth], Combine combine) {
  static_assert(kLive >= 1 && kLive <= kWidth, "a tree of at least one live value");
  if constexpr (kLive == 1) {
    return values[0];
  } else {
#pragma unroll
    for (int i = 0; i < kLive / 2; ++i)
      values[i] = combine(values[2 * i], values[2 * i + 1]);
    if constexpr (kLive % 2 != 0) values[kLive / 2] = values[kLive - 1];
    return tree_reduce_live<kWidth, (kLive + 1) / 2>(values, combine);
  }
}

// Reduces values[0 .. kWidth) in place and returns the result.
template <int kWidth, typename Combine>
__device__ __forceinline__ float tree_reduce(float (&values)[kWidth], Combine combine) {
  return tree_reduce_live<kWidth, kWidth>(values, combine);
}

}  // namespace flashscope::v35
