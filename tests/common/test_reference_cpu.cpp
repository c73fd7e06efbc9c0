#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "kernels/common/reference.hpp"

using namespace flashscope;

TEST_CASE("fp64 CPU attention on a case worked by hand") {
  // One sample, one head, two positions, d_head = 4 (scale 1/2).
  // q0 = (2,0,0,0), q1 = (0,0,0,0); k0 = (1,0,0,0), k1 = (0,1,0,0); v0 = (1,2,3,4), v1 = (5,6,7,8).
  // Row 0 scores (1, 0) -> softmax (e/(e+1), 1/(e+1)); row 1 scores (0, 0) -> (1/2, 1/2).
  const Problem shape = multi_head_problem(DType::FP16, 1, 2, 1, 4);
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
  const Problem shape = multi_head_problem(DType::FP16, 2, 3, 2, 2);
  std::vector<double> q(shape.query_elements(), 0.0), k(shape.query_elements(), 0.0),
      v(shape.query_elements());
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
  CHECK_THROWS_WITH_AS(
      cpu_attention_fp64(multi_head_problem(DType::FP16, 1, 2, 1, 4), {1.0}, {1.0}, {1.0}),
      doctest::Contains("q must hold batch x seq_len x heads x d_head = 8"), std::invalid_argument);
  Problem grouped = multi_head_problem(DType::FP16, 1, 2, 4, 4);
  grouped.heads_kv = 3;
  CHECK_THROWS_WITH_AS(cpu_attention_fp64(grouped, {}, {}, {}),
                       doctest::Contains("heads 4 is not a multiple of heads_kv 3"),
                       std::invalid_argument);
}

TEST_CASE("fp64 CPU attention with grouped K/V heads equals multi-head with K/V repeated") {
  // 6 query heads over 2 K/V heads (groups of 3): query head h reads K/V head h / 3. The same
  // problem written as multi-head attention repeats each K/V head for its group.
  Problem grouped = multi_head_problem(DType::FP16, 2, 5, 6, 4);
  grouped.heads_kv = 2;
  std::vector<double> q(grouped.query_elements()), k(grouped.key_value_elements()),
      v(grouped.key_value_elements());
  for (std::size_t i = 0; i < q.size(); ++i)
    q[i] = std::sin(0.37 * static_cast<double>(i) + 0.5);
  for (std::size_t i = 0; i < k.size(); ++i) {
    k[i] = std::cos(0.91 * static_cast<double>(i));
    v[i] = std::sin(1.7 * static_cast<double>(i) + 0.2);
  }
  const Problem full = multi_head_problem(DType::FP16, 2, 5, 6, 4);
  std::vector<double> k_full(full.query_elements()), v_full(full.query_elements());
  for (int b = 0; b < 2; ++b)
    for (int s = 0; s < 5; ++s)
      for (int h = 0; h < 6; ++h)
        for (int c = 0; c < 4; ++c) {
          const std::size_t to = ((static_cast<std::size_t>(b) * 5 + s) * 6 + h) * 4 + c;
          const std::size_t from = ((static_cast<std::size_t>(b) * 5 + s) * 2 + h / 3) * 4 + c;
          k_full[to] = k[from];
          v_full[to] = v[from];
        }
  for (const bool causal : {false, true}) {
    grouped.causal = causal;
    Problem repeated = full;
    repeated.causal = causal;
    const std::vector<double> expected = cpu_attention_fp64(repeated, q, k_full, v_full);
    const std::vector<double> actual = cpu_attention_fp64(grouped, q, k, v);
    REQUIRE(actual.size() == expected.size());
    for (std::size_t i = 0; i < actual.size(); ++i)
      CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(1e-14));
  }
}

TEST_CASE("fp64 CPU attention with the causal mask: each query sees keys up to its own position") {
  // Random-looking but fixed inputs; two samples and two heads so indexing is exercised.
  Problem shape = multi_head_problem(DType::FP16, 2, 5, 2, 4);
  std::vector<double> q(shape.query_elements()), k(shape.query_elements()),
      v(shape.query_elements());
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
  Problem shape = multi_head_problem(DType::FP16, 16, 4096, 16, 128);
  CHECK(matmul_flops(shape) == matmul_flops(16, 16, 4096, 128));
  CHECK(seed_attention_flops(shape) == seed_attention_flops(16, 16, 4096, 128));
  shape.causal = true;
  // 2·b·h·N²·d, the FlashAttention convention.
  CHECK(matmul_flops(shape) == doctest::Approx(2.0 * 16 * 16 * 4096.0 * 4096 * 128));
  CHECK(seed_attention_flops(multi_head_problem(DType::FP16, 1, 2, 1, 128, true)) ==
        doctest::Approx((4.0 * 4 * 128 + 6.0 * 4) / 2));
  // Grouped K/V heads do not change the arithmetic: every query head still meets every key.
  Problem grouped = multi_head_problem(DType::FP16, 16, 4096, 32, 128);
  grouped.heads_kv = 8;
  CHECK(matmul_flops(grouped) == matmul_flops(16, 32, 4096, 128));
  // The backward pass counts 2.5 times the forward's.
  grouped.pass = Pass::backward;
  CHECK(matmul_flops(grouped) == doctest::Approx(2.5 * matmul_flops(16, 32, 4096, 128)));
}
