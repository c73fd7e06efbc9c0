// Online softmax over the KV blocks (spec §3.3). A thread holds rows g and g + 8 of each of its
// warp's m-tiles; the four threads of a quad (same g) share a row, so row maxima and the final
// row sums are reduced over the quad with two xor-shuffles.
#pragma once

#include <cmath>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/v26/fragments.cuh"
#include "kernels/versions/v26/layout.cuh"

namespace flashscope::v26 {

__device__ __forceinline__ float quad_max(float value) {
  value = fmaxf(value, ptx::shuffle_xor(value, 2));
  return fmaxf(value, ptx::shuffle_xor(value, 1));
}

__device__ __forceinline__ float quad_sum(float value) {
  value += ptx::shuffle_xor(value, 2);
  return value + ptx::shuffle_xor(value, 1);
}

template <KernelConfig C>
class OnlineSoftmax {
  using Sh = Shape<C>;
  // Independent reduction chains per row and thread (step 26): a block's S has B_c / 8 fragments
  // per thread and row, a multiple of 4 for every B_c the tune sets use.
  static constexpr int kChains = 4;
  static_assert(Sh::kScoreNTiles % kChains == 0, "B_c must be a multiple of 32");

 public:
  // The first block sets m and l from its own scores (update<true>), so nothing is pre-filled.
  // (Hopper configs carry no optimized_softmax flag: the specialised first block of steps 10–16
  // is always taken.)
  __device__ __forceinline__ OnlineSoftmax() {}

  // The factor exp(m_old - m_new) each of this thread's rows of O must be multiplied by.
  using RescaleFactors = float[Sh::kMTiles][2];

  // Folds one KV block's scores into the running statistics: updates the row maxima and the
  // partial row sums and overwrites S with the unnormalised probabilities exp(S / sqrt(d) - m_new).
  // O is not touched: step 21 runs this while P·V of the previous block still accumulates into O
  // on the tensor cores, and rescales O by `factors` (rescale) once that GEMM has completed.
  //
  // Always the exp2 form: the maxima stay in unscaled score units, which is valid because the
  // scale is positive, and scale·log2(e) is folded into a single FFMA feeding ex2. The first block
  // (kIsFirstBlock) has nothing to rescale: the maximum and the sum are the block's own, and
  // `factors` is left unset. Later blocks take max(m_old, block maximum) and α·l + block sum.
  template <bool kIsFirstBlock>
  __device__ __forceinline__ void update_scores(Accumulators<Sh::kMTiles, Sh::kScoreNTiles>& S,
                                                RescaleFactors& factors) {
#pragma unroll
    for (int m = 0; m < Sh::kMTiles; ++m) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        // This thread's two scores per n-tile in the row: c0, c1 (row g) or c2, c3 (row g + 8).
        const int first = 2 * half;

        // The row maximum as kChains independent partial maxima, each over every kChains-th
        // fragment, combined at the end: four chains of B_c / 32 dependent FMNMX instead of one
        // of B_c / 8, so the exponentials can start that much sooner.
        float partial_max[kChains];
#pragma unroll
        for (int chain = 0; chain < kChains; ++chain)
          partial_max[chain] = fmaxf(S[m][chain][first], S[m][chain][first + 1]);
#pragma unroll
        for (int n = kChains; n < Sh::kScoreNTiles; ++n) {
          partial_max[n % kChains] =
              fmaxf(partial_max[n % kChains], fmaxf(S[m][n][first], S[m][n][first + 1]));
        }
        float block_max =
            fmaxf(fmaxf(partial_max[0], partial_max[1]), fmaxf(partial_max[2], partial_max[3]));
        if constexpr (!kIsFirstBlock) block_max = fmaxf(row_max_[m][half], block_max);
        const float new_max = quad_max(block_max);

        const float new_max_scaled = new_max * Sh::kSoftmaxScaleLog2;
#pragma unroll
        for (int n = 0; n < Sh::kScoreNTiles; ++n) {
#pragma unroll
          for (int i = first; i < first + 2; ++i) {
            S[m][n][i] = ptx::exp2_approx(fmaf(S[m][n][i], Sh::kSoftmaxScaleLog2, -new_max_scaled));
          }
        }

        // The thread-partial sum is enough: all four partial sums of a row are rescaled by the
        // same factor, so they are only combined once, in normalize(). Within the thread it is
        // kChains independent chains as for the maximum, added at the end.
        float partial_sum[kChains];
#pragma unroll
        for (int chain = 0; chain < kChains; ++chain)
          partial_sum[chain] = S[m][chain][first] + S[m][chain][first + 1];
#pragma unroll
        for (int n = kChains; n < Sh::kScoreNTiles; ++n)
          partial_sum[n % kChains] += S[m][n][first] + S[m][n][first + 1];
        const float block_sum =
            (partial_sum[0] + partial_sum[1]) + (partial_sum[2] + partial_sum[3]);
        float row_sum;
        if constexpr (kIsFirstBlock) {
          row_sum = block_sum;
        } else {
          const float rescale =
              ptx::exp2_approx((row_max_[m][half] - new_max) * Sh::kSoftmaxScaleLog2);
          row_sum = fmaf(rescale, row_sum_[m][half], block_sum);
          factors[m][half] = rescale;
        }
        row_max_[m][half] = new_max;
        row_sum_[m][half] = row_sum;
      }
    }
  }

  // Multiplies each of this thread's O rows by its factor from update_scores.
  __device__ __forceinline__ void rescale(Accumulators<Sh::kMTiles, Sh::kOutputNTiles>& O,
                                          const RescaleFactors& factors) {
#pragma unroll
    for (int m = 0; m < Sh::kMTiles; ++m) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
#pragma unroll
        for (int n = 0; n < Sh::kOutputNTiles; ++n) {
          O[m][n][2 * half] *= factors[m][half];
          O[m][n][2 * half + 1] *= factors[m][half];
        }
      }
    }
  }

  // Scales each O row by the reciprocal of its full row sum, once, after the last KV block: one
  // division per row instead of one per element.
  __device__ __forceinline__ void normalize(Accumulators<Sh::kMTiles, Sh::kOutputNTiles>& O) {
#pragma unroll
    for (int m = 0; m < Sh::kMTiles; ++m) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float inverse_row_sum = 1.0f / quad_sum(row_sum_[m][half]);
#pragma unroll
        for (int n = 0; n < Sh::kOutputNTiles; ++n) {
          O[m][n][2 * half] *= inverse_row_sum;
          O[m][n][2 * half + 1] *= inverse_row_sum;
        }
      }
    }
  }

 private:
  float row_max_[Sh::kMTiles][2];  // [m-tile][row g, row g + 8]
  float row_sum_[Sh::kMTiles][2];
};

}  // namespace flashscope::v26
