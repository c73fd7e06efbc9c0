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
  // (kIsFirstBlock) has nothing to rescale: the maximum starts from the row's first score and the
  // sum from its first probability, and `factors` is left unset. Later blocks start the maximum
  // from max(m_old, S[0]) and the sum from α·l + P[0].
  template <bool kIsFirstBlock>
  __device__ __forceinline__ void update_scores(Accumulators<Sh::kMTiles, Sh::kScoreNTiles>& S,
                                                RescaleFactors& factors) {
#pragma unroll
    for (int m = 0; m < Sh::kMTiles; ++m) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        // This thread's two scores per n-tile in the row: c0, c1 (row g) or c2, c3 (row g + 8).
        const int first = 2 * half;

        float block_max = kIsFirstBlock ? S[m][0][first] : fmaxf(row_max_[m][half], S[m][0][first]);
        block_max = fmaxf(block_max, S[m][0][first + 1]);
#pragma unroll
        for (int n = 1; n < Sh::kScoreNTiles; ++n) {
          block_max = fmaxf(block_max, fmaxf(S[m][n][first], S[m][n][first + 1]));
        }
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
        // same factor, so they are only combined once, in normalize().
        float row_sum;
        if constexpr (kIsFirstBlock) {
          row_sum = S[m][0][first];
        } else {
          const float rescale =
              ptx::exp2_approx((row_max_[m][half] - new_max) * Sh::kSoftmaxScaleLog2);
          row_sum = rescale * row_sum_[m][half] + S[m][0][first];
          factors[m][half] = rescale;
        }
        row_sum += S[m][0][first + 1];
#pragma unroll
        for (int n = 1; n < Sh::kScoreNTiles; ++n)
          row_sum += S[m][n][first] + S[m][n][first + 1];
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
  // division per row instead of one per element. The quad's partial sums are combined here, and
  // the full sum stays for log_sum_exp.
  __device__ __forceinline__ void normalize(Accumulators<Sh::kMTiles, Sh::kOutputNTiles>& O) {
#pragma unroll
    for (int m = 0; m < Sh::kMTiles; ++m) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        row_sum_[m][half] = quad_sum(row_sum_[m][half]);
        const float inverse_row_sum = 1.0f / row_sum_[m][half];
#pragma unroll
        for (int n = 0; n < Sh::kOutputNTiles; ++n) {
          O[m][n][2 * half] *= inverse_row_sum;
          O[m][n][2 * half + 1] *= inverse_row_sum;
        }
      }
    }
  }

  // The natural-log log-sum-exp of row `half` of m-tile m's scaled scores s = Q·Kᵀ / sqrt(d), for
  // the backward pass: L = ln sum_j exp(s_j) = m / sqrt(d) + ln l, where m is the row maximum in
  // unscaled score units and l = sum_j exp2((S_j - m) · scale · log2(e)) = sum_j exp(s_j -
  // m / sqrt(d)) the full row sum. In base 2: L = (m · scale · log2(e) + log2 l) · ln 2. Valid
  // after normalize(); every lane of the quad holds the same value.
  __device__ __forceinline__ float log_sum_exp(int m, int half) const {
    constexpr float kLn2 = 0.6931471805599453f;
    return (row_max_[m][half] * Sh::kSoftmaxScaleLog2 + __log2f(row_sum_[m][half])) * kLn2;
  }

 private:
  float row_max_[Sh::kMTiles][2];  // [m-tile][row g, row g + 8]
  float row_sum_[Sh::kMTiles][2];
};

}  // namespace flashscope::v26
