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

// 2^x on the FMA pipe, for x <= 0 (scores minus their row maximum), to within 7.5e-5 relative
// error: under half a unit in the last place of fp16 (2^-12), so P rounds to the same 16-bit
// values as from MUFU.EX2 but for ties. x = j + f with j = round(x) and f in [-0.5, 0.5]:
// 2^f is a degree-3 polynomial fitted for the least maximum relative error over that interval
// (scripts/fit_exp2_polynomial.py, Lawson's iteration), and 2^j is added to its exponent
// field. Adding 1.5 * 2^23 rounds x to an integer in the low mantissa bits of the sum, so the sum
// carries j (mod 2^9) in bits 0-8: shifted to bits 23-31 and added to the polynomial's bits it
// multiplies by 2^j, the offset's own bits falling off the top. Clamping x at -126 keeps the
// exponent normal (the masked scores of steps 23+ are -2^100): 2^-126 instead of 0, which is below
// every 16-bit P but bf16's smallest normal and vanishes next to any row sum. Eight FP32/INT
// instructions and no SFU; __fadd_rn keeps the compiler from folding the two additions of the
// offset.
__device__ __forceinline__ float exp2_on_fma(float x) {
  constexpr float kRoundingOffset = 12582912.0f;  // 1.5 * 2^23
  constexpr float kC0 = 0.999928057f;
  constexpr float kC1 = 0.693260968f;
  constexpr float kC2 = 0.24261117f;
  constexpr float kC3 = 0.0551716723f;
  x = fmaxf(x, -126.0f);
  const float offset_sum = __fadd_rn(x, kRoundingOffset);
  const float j = __fadd_rn(offset_sum, -kRoundingOffset);
  const float f = __fadd_rn(x, -j);
  const float two_to_f = fmaf(fmaf(fmaf(kC3, f, kC2), f, kC1), f, kC0);
  return __int_as_float(__float_as_int(two_to_f) + (__float_as_int(offset_sum) << 23));
}

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

  // Which fragments' exponentials go to the FMA pipe: every kFmaExpPeriod-th at d_head = 64, none
  // above. Per element the SFU takes 8 cycles of a sub-partition's issue-free SFU time per warp
  // instruction and the polynomial 8 issue slots; with the softmax's other 4.5 issue slots per
  // element, a quarter on the FMA pipe balances the two (docs/versions/26.md). At 128 and 256 the
  // tensor cores, not the SFUs, set the pace, and the extra issue slots would only cost.
  static constexpr bool kExpOnFma = C.d_head == 64;
  static constexpr int kFmaExpPeriod = 4;
  __host__ __device__ static constexpr bool computes_on_fma(int fragment) {
    return kExpOnFma && fragment % kFmaExpPeriod == kFmaExpPeriod - 1;
  }

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
            const float x = fmaf(S[m][n][i], Sh::kSoftmaxScaleLog2, -new_max_scaled);
            S[m][n][i] = computes_on_fma(n) ? exp2_on_fma(x) : ptx::exp2_approx(x);
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
