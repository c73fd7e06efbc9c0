#include <doctest/doctest.h>

#include <cmath>

#include "kernels/common/reference.hpp"

using namespace flashscope;

TEST_CASE("fp64 CPU attention on a case worked by hand") {
  // One sample, one head, two positions, d_head = 4 (scale 1/2).
  // q0 = (2,0,0,0), q1 = (0,0,0,0); k0 = (1,0,0,0), k1 = (0,1,0,0); v0 = (1,2,3,4), v1 = (5,6,7,8).
  // Row 0 scores (1, 0) -> softmax (e/(e+1), 1/(e+1)); row 1 scores (0, 0) -> (1/2, 1/2).
  const AttentionShape shape{1, 2, 1, 4};
  const std::vector<double> q = {2, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<double> k = {1, 0, 0, 0, 0, 1, 0, 0};
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<double> o = cpu_attention_fp64(shape, q, k, v);
  const double p0 = std::exp(1.0) / (std::exp(1.0) + 1.0);
  for (int c = 0; c < 4; ++c) {
    CHECK(o[c] == doctest::Approx(p0 * v[c] + (1 - p0) * v[4 + c]).epsilon(1e-15));
    CHECK(o[4 + c] == doctest::Approx(0.5 * (v[c] + v[4 + c])).epsilon(1e-15));
  }
}

TEST_CASE("fp64 CPU attention keeps heads and samples apart") {
  // Two heads with identical q/k but different v: each head's output must come from its own v.
  const AttentionShape shape{2, 3, 2, 2};
  std::vector<double> q(shape.elements(), 0.0), k(shape.elements(), 0.0), v(shape.elements());
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<double>(i);
  const std::vector<double> o = cpu_attention_fp64(shape, q, k, v);
  // All-zero scores: every output row is the mean of its (sample, head) V rows.
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 2; ++h)
      for (int c = 0; c < 2; ++c) {
        double mean = 0;
        for (int s = 0; s < 3; ++s)
          mean += v[((b * 3 + s) * 2 + h) * 2 + c] / 3.0;
        for (int s = 0; s < 3; ++s)
          CHECK(o[((b * 3 + s) * 2 + h) * 2 + c] == doctest::Approx(mean));
      }
}

TEST_CASE("fp64 CPU attention rejects mismatched buffers") {
  CHECK_THROWS_WITH_AS(cpu_attention_fp64({1, 2, 1, 4}, {1.0}, {1.0}, {1.0}),
                       doctest::Contains("must each hold"), std::invalid_argument);
}
