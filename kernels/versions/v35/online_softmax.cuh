// Online softmax over the KV blocks (spec §3.3). A thread holds rows g and g + 8 of each of its
// warp's m-tiles; the four threads of a quad (same g) share a row, so row maxima and the final
// row sums are reduced over the quad with two xor-shuffles.
#pragma once

#include <cmath>

#include "kernels/common/config.hpp"
#include "kernels/common/ptx.cuh"
#include "kernels/versions/v35/fragments.cuh"
#include "kernels/versions/v35/layout.cuh"

namespace flashscope::v35 {

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

  // How far (log2 units: exp2 of the scaled scores) a row's maximum may grow before step 27
  // rescales O and l (docs/versions/27.md). Until it grows by more, the row keeps its old maximum
  // as the reference of exp2, so its probabilities P = exp2((S - m) · scale · log2 e) are at most
  // 2^8 = 256: far below fp16's largest 65504 (and bf16's), with the same relative rounding as
  // P <= 1, since a 16-bit element's precision does not depend on its magnitude in the normal
  // range. l and O grow by at most the same 256 against the exact reference: l <= 256 · seq_len,
  // nowhere near fp32's range. O and l share the reference, so O / l and the log-sum-exp (with
  // the reference actually used) stay exact.
  static constexpr float kRescaleThreshold = 8.0f;

  // Folds one KV block's scores into the running statistics: updates the row maxima and the
  // partial row sums and overwrites S with the unnormalised probabilities exp(S / sqrt(d) - m),
  // m the row's reference maximum. O is not touched: step 21 runs this while P·V of the previous
  // block still accumulates into O on the tensor cores, and rescales O by `factors` (rescale) once
  // that GEMM has completed.
  //
  // Always the exp2 form: the maxima stay in unscaled score units, which is valid because the
  // scale is positive, and scale·log2(e) is folded into a single FFMA feeding ex2. The first block
  // (kIsFirstBlock) has nothing to rescale: the maximum starts from the row's first score and the
  // sum from its first probability, and `factors` is left unset.
  //
  // Step 27: a later block moves a row's reference maximum only when the block's maximum exceeds
  // it by more than kRescaleThreshold in log2 units; otherwise the row keeps its stale maximum and
  // needs no rescale (its factor would be 1). The warp votes: when none of its 16 rows moves its
  // maximum, neither the exp2 of the factors nor the rescale of l is computed, and the return
  // value false tells the caller to skip the multiplies of O (rescale). When any row does, the
  // rows that moved get exp2(m_old - m_new) and the others exactly 1, as `factors`, and the
  // function returns true. The value is the same in every lane of the warp.
  template <bool kIsFirstBlock>
  __device__ __forceinline__ bool update_scores(Accumulators<Sh::kMTiles, Sh::kScoreNTiles>& S,
                                                RescaleFactors& factors) {
    // Step 27: each row's reference maximum after this block, whether it moved, and the block's
    // thread-partial row sum, kept until the warp has voted.
    float new_maxima[Sh::kMTiles][2];
    bool moves[Sh::kMTiles][2];
    float block_sums[Sh::kMTiles][2];
    bool any_moves = false;
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
        float new_max = quad_max(block_max);
        if constexpr (!kIsFirstBlock) {
          // A row whose first block was wholly masked holds kMaskedScore (-2^100) as its maximum:
          // its first visible key exceeds it by far more than the threshold, so the rescale that
          // zeroes the masked positions' contributions always runs.
          moves[m][half] =
              (new_max - row_max_[m][half]) * Sh::kSoftmaxScaleLog2 > kRescaleThreshold;
          if (!moves[m][half]) new_max = row_max_[m][half];
          any_moves = any_moves || moves[m][half];
        }

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
        float row_sum = S[m][0][first] + S[m][0][first + 1];
#pragma unroll
        for (int n = 1; n < Sh::kScoreNTiles; ++n)
          row_sum += S[m][n][first] + S[m][n][first + 1];
        if constexpr (kIsFirstBlock) {
          row_max_[m][half] = new_max;
          row_sum_[m][half] = row_sum;
        } else {
          new_maxima[m][half] = new_max;
          block_sums[m][half] = row_sum;
        }
      }
    }
    if constexpr (kIsFirstBlock) {
      return false;
    } else {
      // The vote: the same value in every lane, so every lane takes the same branch.
      const bool rescales = __any_sync(0xffffffffu, any_moves);
      if (rescales) {
#pragma unroll
        for (int m = 0; m < Sh::kMTiles; ++m) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const float rescale = moves[m][half]
                                      ? ptx::exp2_approx((row_max_[m][half] - new_maxima[m][half]) *
                                                         Sh::kSoftmaxScaleLog2)
                                      : 1.0f;
            row_sum_[m][half] *= rescale;
            factors[m][half] = rescale;
          }
        }
      }
#pragma unroll
      for (int m = 0; m < Sh::kMTiles; ++m) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          row_max_[m][half] = new_maxima[m][half];
          row_sum_[m][half] += block_sums[m][half];
        }
      }
      return rescales;
    }
  }

  // Multiplies each of this thread's O rows by its factor from update_scores. Step 27 calls it
  // only when update_scores returned true.
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

}  // namespace flashscope::v35
