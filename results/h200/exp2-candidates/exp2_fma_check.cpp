// The reverted candidate step 35's polynomial check (docs/versions/34.md, "A reverted experiment:
// part of the exp2 on the FMA pipe"): a host mirror of exp2_fma<degree> from
// kernels/versions/v35/exp2_fma.cuh of commit c871335 (the same float operations in the same order,
// std::floor for __fadd_rd, the same bit addition), against exp2 in double over every float x in
// [-126, 8]. Build and run: g++ -O2 -ffp-contract=off exp2_fma_check.cpp && ./a.out (about 60 s).
// The run of 2026-11-29 printed, with the tail loop started at -126 itself (which gives exactly
// 2^-126 and so counted as 1 "outside"; the loop below starts just under it):
//   degree 3: 2214330369 floats in [-126, 8], max relative error 8.57e-05 (2^-13.51) at x =
//   -0.553558648; (-127, -126): 1 outside [0, 2^-126); -127, -128.5, -1e29, -inf -> +0.0: 4 of 4
//   degree 4: 2214330369 floats in [-126, 8], max relative error 2.97e-06 (2^-18.36) at x =
//   -0.37994048; (-127, -126): 1 outside [0, 2^-126); -127, -128.5, -1e29, -inf -> +0.0: 4 of 4
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
template <int D>
float exp2_fma(float x) {
  const float kMagic = 12582912.0f;
  x = std::fmax(x, -127.0f);
  const float shifted = std::floor(x) + kMagic;  // = __fadd_rd(x, kMagic) for |x| < 2^22
  const float f = x - (shifted - kMagic);
  float p;
  if (D == 3) {
    const float c1 = 0x1.63e658f42b137p-1, c2 = 0x1.d2378964d8e45p-3, c3 = 0x1.3baaa6b1c166ap-4;
    p = std::fma(std::fma(std::fma(c3, f, c2), f, c1), f, 1.0f);
  } else {
    const float c1 = 0x1.62d6c61eccf07p-1, c2 = 0x1.ee2450e90d7e8p-3, c3 = 0x1.abf868af3dc66p-5,
                c4 = 0x1.b7f73117834f3p-7;
    p = std::fma(std::fma(std::fma(std::fma(c4, f, c3), f, c2), f, c1), f, 1.0f);
  }
  int32_t pb, sb;
  std::memcpy(&pb, &p, 4);
  std::memcpy(&sb, &shifted, 4);
  int32_t r = (int32_t)((uint32_t)pb + ((uint32_t)sb << 23));
  float out;
  std::memcpy(&out, &r, 4);
  return out;
}
template <int D>
void run() {
  double worst = 0;
  float worst_x = 0;
  long n = 0, bad_tail = 0;
  // every float in [-126, 8] (x where 2^x is a normal float), then (-127, -126), then -127 and
  // below
  for (float x = -126.0f; x <= 8.0f; x = std::nextafter(x, 9.0f)) {
    const double e = std::fabs(exp2_fma<D>(x) / std::exp2((double)x) - 1);
    ++n;
    if (e > worst) {
      worst = e;
      worst_x = x;
    }
  }
  for (float x = std::nextafter(-126.0f, -200.0f); x > -127.0f; x = std::nextafter(x, -200.0f)) {
    const float y = exp2_fma<D>(x);
    if (!(y >= 0.0f && y < 0x1p-126f)) ++bad_tail;
  }
  const float masked[] = {-127.0f, -128.5f, -1e29f, -INFINITY};
  int exact_zero = 0;
  for (float m : masked) {
    float y = exp2_fma<D>(m);
    uint32_t b;
    std::memcpy(&b, &y, 4);
    exact_zero += (b == 0);
  }
  std::printf(
      "degree %d: %ld floats in [-126, 8], max relative error %.3g (2^%.2f) at x = %.9g; "
      "(-127, -126): %ld outside [0, 2^-126); -127, -128.5, -1e29, -inf -> +0.0: %d of 4\n",
      D, n, worst, std::log2(worst), worst_x, bad_tail, exact_zero);
}
int main() {
  run<3>();
  run<4>();
}
