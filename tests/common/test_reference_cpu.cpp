#include <doctest/doctest.h>

#include <algorithm>
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

TEST_CASE("fp64 CPU attention with the causal mask: each query sees keys up to its own position") {
  // Random-looking but fixed inputs; two samples and two heads so indexing is exercised.
  AttentionShape shape{2, 5, 2, 4};
  std::vector<double> q(shape.elements()), k(shape.elements()), v(shape.elements());
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = std::sin(0.7 * static_cast<double>(i) + 0.1);
    k[i] = std::cos(1.3 * static_cast<double>(i) + 0.2);
    v[i] = std::sin(2.1 * static_cast<double>(i) + 0.3) * 3.0;
  }
  const std::vector<double> full = cpu_attention_fp64(shape, q, k, v);
  shape.causal = true;
  const std::vector<double> causal = cpu_attention_fp64(shape, q, k, v);
  const auto at = [&](int b, int s, int h, int c) {
    return ((static_cast<std::size_t>(b) * shape.seq_len + s) * shape.heads + h) * shape.d_head + c;
  };
  for (int b = 0; b < shape.batch; ++b)
    for (int h = 0; h < shape.heads; ++h) {
      // Query 0 attends to key 0 alone: its output is V's row 0 exactly.
      for (int c = 0; c < shape.d_head; ++c)
        CHECK(causal[at(b, 0, h, c)] == doctest::Approx(v[at(b, 0, h, c)]).epsilon(1e-15));
      // The last query sees every key: the mask changes nothing there.
      for (int c = 0; c < shape.d_head; ++c)
        CHECK(causal[at(b, 4, h, c)] == doctest::Approx(full[at(b, 4, h, c)]).epsilon(1e-12));
      // Query 2 is the softmax over keys 0..2 only, worked out here directly.
      double scores[3], row_max = -INFINITY, sum = 0;
      for (int j = 0; j < 3; ++j) {
        double dot = 0;
        for (int c = 0; c < shape.d_head; ++c)
          dot += q[at(b, 2, h, c)] * k[at(b, j, h, c)];
        scores[j] = dot / 2.0;  // 1/sqrt(4)
        row_max = std::max(row_max, scores[j]);
      }
      for (double& s : scores)
        sum += s = std::exp(s - row_max);
      for (int c = 0; c < shape.d_head; ++c) {
        double expected = 0;
        for (int j = 0; j < 3; ++j)
          expected += scores[j] / sum * v[at(b, j, h, c)];
        CHECK(causal[at(b, 2, h, c)] == doctest::Approx(expected).epsilon(1e-12));
      }
    }
  // Elsewhere the masked problem has other outputs than the unmasked one.
  double largest_difference = 0;
  for (std::size_t i = 0; i < full.size(); ++i)
    largest_difference = std::max(largest_difference, std::abs(full[i] - causal[i]));
  CHECK(largest_difference > 0.1);
}

TEST_CASE("a problem's FLOP: the shape's count, half of it for the causal workload") {
  AttentionShape shape{16, 4096, 16, 128};
  CHECK(matmul_flops(shape) == matmul_flops(16, 16, 4096, 128));
  CHECK(seed_attention_flops(shape) == seed_attention_flops(16, 16, 4096, 128));
  shape.causal = true;
  // 2·b·h·N²·d, the FlashAttention convention.
  CHECK(matmul_flops(shape) == doctest::Approx(2.0 * 16 * 16 * 4096.0 * 4096 * 128));
  CHECK(seed_attention_flops(AttentionShape{1, 2, 1, 128, true}) ==
        doctest::Approx((4.0 * 4 * 128 + 6.0 * 4) / 2));
}
