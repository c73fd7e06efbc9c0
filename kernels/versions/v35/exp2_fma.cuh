// Step 35: part of the softmax's exp2 on the FMA pipe (docs/versions/35.md).
//
// The MUFU returns 16 ex2 results a clock per SM (one warp instruction per 8 cycles per SM
// sub-partition); while a consumer's softmax runs, its `MUFU.EX2` stream leaves the issue slots
// between them idle (docs/versions/33.md, "Where step 33's FP8 time goes": 20.7 % of the
// consumers' samples). A fixed subset of each thread's score elements takes 2^x from a
// polynomial in FFMAs instead, which ptxas interleaves with the remaining `MUFU.EX2`s.
#pragma once

#include "kernels/common/config.hpp"

namespace flashscope::v35 {

// How many of every 8 consecutive score elements of a thread's row (2n + c, c the fragment
// column) take the polynomial, by dtype and d_head. A compile-time choice, so every thread takes
// the same path and nothing diverges. By the arithmetic of docs/versions/35.md: where the MUFU
// needs as many clocks as the tensor pipe (16-bit d_head 64, e4m3 d_head 64 and 128) a quarter,
// where it needs half as many (16-bit d_head 128, e4m3 d_head 256) an eighth, and none at 16-bit
// d_head 256 (a quarter of the tensor pipe's clocks: the polynomial would only add issue slots).
constexpr int exp2_fma_eighths(DType dtype, int d_head) {
  if (dtype == DType::E4M3) return d_head <= 128 ? 2 : 1;
  return d_head == 64 ? 2 : d_head == 128 ? 1 : 0;
}

// The polynomial's degree by the dtype P is rounded to before P·V (the fp32 row sum takes the
// unrounded value): its maximum relative error on [0, 1) must stay well under half an ulp of
// that dtype. Degree 3 (8.6e-5, measured in float arithmetic: docs/versions/35.md) for e4m3 (3
// mantissa bits, half an ulp 2^-4) and bf16 (8 bits, 2^-9 = 2.0e-3); degree 4 (2.9e-6) for fp16
// (11 bits, 2^-12 = 2.4e-4, which degree 3 would approach within a factor 3).
constexpr int exp2_fma_degree(DType dtype) {
  return dtype == DType::FP16 ? 4 : 3;
}

// Whether element (n, c) of a thread's row takes the polynomial: elements 2n + c with
// (2n + c) mod 8 < eighths, spread evenly along the row so that the MUFU and the FMA pipe work
// side by side through the whole unrolled loop.
template <int kEighths>
__device__ __forceinline__ constexpr bool exp2_on_fma(int n, int c) {
  return ((2 * n + c) & 7) < kEighths;
}

// 2^x in FMA-pipe instructions: x = j + f with j = floor(x) and f in [0, 1), 2^f from a minimax
// polynomial p with p(0) = 1 exactly (relative error, Lawson's algorithm), and j added into the
// exponent field. floor comes from one FADD rounding towards -inf against 1.5 · 2^23, whose low
// mantissa bits then hold j in two's complement; shifted left by 23 they are j's exponent
// increment (the magic's own bits leave the word), added to p's bits by one integer instruction.
// x is clamped at -127 first: a masked score (-inf, or the 16-bit path's -2^100 times the scale)
// gives j = -127, f = 0, p = 1 and so exactly the bits of +0.0, as ex2.approx.ftz gives 0; x in
// (-127, -126) gives a subnormal below 2^-126, which ex2.approx.ftz would flush to 0. The
// largest x the kernels pass is 8 (step 27's threshold; the FP8 path's 2^8 scale of P).
template <int kDegree>
__device__ __forceinline__ float exp2_fma(float x) {
  static_assert(kDegree >= 3 && kDegree <= 4, "degree 3 or 4 (exp2_fma_degree)");
  constexpr float kMagic = 12582912.0f;  // 1.5 · 2^23
  x = fmaxf(x, -127.0f);
  const float shifted = __fadd_rd(x, kMagic);
  const float f = x - (shifted - kMagic);  // shifted - kMagic = floor(x), exactly
  // The coefficients as Lawson's algorithm gave them in double, rounded to float here.
  float p;
  if constexpr (kDegree == 3) {
    constexpr float c1 = 0x1.63e658f42b137p-1, c2 = 0x1.d2378964d8e45p-3, c3 = 0x1.3baaa6b1c166ap-4;
    p = fmaf(fmaf(fmaf(c3, f, c2), f, c1), f, 1.0f);
  } else {
    constexpr float c1 = 0x1.62d6c61eccf07p-1, c2 = 0x1.ee2450e90d7e8p-3, c3 = 0x1.abf868af3dc66p-5,
                    c4 = 0x1.b7f73117834f3p-7;
    p = fmaf(fmaf(fmaf(fmaf(c4, f, c3), f, c2), f, c1), f, 1.0f);
  }
  return __int_as_float(__float_as_int(p) + (__float_as_int(shifted) << 23));
}

}  // namespace flashscope::v35
