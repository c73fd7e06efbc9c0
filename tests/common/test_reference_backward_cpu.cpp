// The fp64 CPU backward (kernels/common/reference_backward.hpp) against finite differences of the
// forward, with and without the causal mask, and against gradients known in closed form.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/common/reference.hpp"
#include "kernels/common/reference_backward.hpp"

using namespace flashscope;

namespace {

// Fixed, irregular inputs (no symmetry a wrong index could hide behind).
std::vector<double> wave(std::size_t count, double frequency, double phase, double amplitude) {
  std::vector<double> x(count);
  for (std::size_t i = 0; i < count; ++i)
    x[i] = amplitude * std::sin(frequency * static_cast<double>(i) + phase);
  return x;
}

// The scalar loss whose gradient the backward computes: sum(dO ∘ O(Q, K, V)).
double loss(const Problem& shape, const std::vector<double>& q, const std::vector<double>& k,
            const std::vector<double>& v, const std::vector<double>& d_o) {
  const std::vector<double> o = cpu_attention_fp64(shape, q, k, v);
  double sum = 0;
  for (std::size_t i = 0; i < o.size(); ++i)
    sum += d_o[i] * o[i];
  return sum;
}

// Central differences of the loss in every element of q, k and v, against the backward.
void check_against_finite_differences(const Problem& shape) {
  const auto count = static_cast<std::size_t>(shape.query_elements());
  std::vector<double> q = wave(count, 0.71, 0.1, 1.3);
  std::vector<double> k = wave(count, 1.37, 0.4, 1.1);
  std::vector<double> v = wave(count, 2.11, 0.9, 2.0);
  const std::vector<double> d_o = wave(count, 0.53, 1.7, 1.5);
  const AttentionBackwardFp64 g = cpu_attention_backward_fp64(shape, q, k, v, d_o);
  const double step = 1e-5;
  double worst = 0;
  const auto differentiate = [&](std::vector<double>& x, const std::vector<double>& gradient) {
    for (std::size_t i = 0; i < count; ++i) {
      const double saved = x[i];
      x[i] = saved + step;
      const double up = loss(shape, q, k, v, d_o);
      x[i] = saved - step;
      const double down = loss(shape, q, k, v, d_o);
      x[i] = saved;
      const double numeric = (up - down) / (2 * step);
      CHECK(gradient[i] == doctest::Approx(numeric).epsilon(1e-7).scale(1.0));
      worst = std::max(worst, std::abs(gradient[i] - numeric));
    }
  };
  differentiate(q, g.dq);
  differentiate(k, g.dk);
  differentiate(v, g.dv);
  MESSAGE("largest |analytic - numeric| = " << worst);
}

}  // namespace

TEST_CASE("fp64 CPU backward matches finite differences of the forward") {
  // Two samples and heads, an odd length and d_head: every index of the loops is exercised.
  check_against_finite_differences(multi_head_problem(DType::FP16, 2, 5, 2, 3));
}

TEST_CASE("fp64 CPU backward with the causal mask matches finite differences") {
  Problem shape = multi_head_problem(DType::FP16, 2, 6, 2, 4);
  shape.causal = true;
  check_against_finite_differences(shape);
}

TEST_CASE("fp64 CPU backward: its forward and log-sum-exp are the forward reference's") {
  for (const bool causal : {false, true}) {
    Problem shape = multi_head_problem(DType::FP16, 1, 7, 3, 4);
    shape.causal = causal;
    const auto count = static_cast<std::size_t>(shape.query_elements());
    const std::vector<double> q = wave(count, 0.3, 0.2, 2.0), k = wave(count, 0.9, 0.5, 2.0),
                              v = wave(count, 1.9, 0.1, 1.0), d_o = wave(count, 1.1, 0.3, 1.0);
    const AttentionBackwardFp64 g = cpu_attention_backward_fp64(shape, q, k, v, d_o);
    const std::vector<double> o = cpu_attention_fp64(shape, q, k, v);
    for (std::size_t i = 0; i < count; ++i)
      CHECK(g.o[i] == doctest::Approx(o[i]).epsilon(1e-13));
    // L of query i: ln(sum_j exp(q_i·k_j / 2)) over its keys, worked out directly (d = 4).
    for (int h = 0; h < shape.heads; ++h)
      for (int i = 0; i < shape.seq_len; ++i) {
        double sum = 0;
        const int keys = causal ? i + 1 : shape.seq_len;
        for (int j = 0; j < keys; ++j) {
          double dot = 0;
          for (int c = 0; c < 4; ++c)
            dot += q[(i * 3 + h) * 4 + c] * k[(j * 3 + h) * 4 + c];
          sum += std::exp(dot / 2);
        }
        CHECK(g.lse[h * shape.seq_len + i] == doctest::Approx(std::log(sum)).epsilon(1e-13));
      }
  }
}

TEST_CASE("fp64 CPU backward of uniform attention (Q = 0) in closed form") {
  // Q = 0 makes every score 0, so P = 1/N everywhere and
  //   dV_j = (1/N) sum_i dO_i,
  //   dS_ij = (1/N) dO_i · (V_j - mean V)   (dP_ij = dO_i · V_j, D_i = dO_i · mean V),
  //   dQ_i = scale · sum_j dS_ij K_j,   dK_j = scale · sum_i dS_ij Q_i = 0.
  const Problem shape = multi_head_problem(DType::FP16, 1, 4, 1, 4);
  const int n = 4, d = 4;
  const double scale = 0.5;
  const std::vector<double> q(16, 0.0);
  const std::vector<double> k = wave(16, 1.3, 0.2, 1.0), v = wave(16, 0.7, 0.4, 2.0),
                            d_o = wave(16, 2.3, 0.8, 1.0);
  const AttentionBackwardFp64 g = cpu_attention_backward_fp64(shape, q, k, v, d_o);
  std::vector<double> mean_v(d, 0.0), mean_do(d, 0.0);
  for (int j = 0; j < n; ++j)
    for (int c = 0; c < d; ++c) {
      mean_v[c] += v[j * d + c] / n;
      mean_do[c] += d_o[j * d + c] / n;
    }
  for (int j = 0; j < n; ++j)
    for (int c = 0; c < d; ++c) {
      CHECK(g.dv[j * d + c] == doctest::Approx(mean_do[c]).epsilon(1e-14));
      CHECK(g.dk[j * d + c] == doctest::Approx(0.0).scale(1.0).epsilon(1e-15));
    }
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < d; ++c) {
      double expected = 0;
      for (int j = 0; j < n; ++j) {
        double ds = 0;
        for (int e = 0; e < d; ++e)
          ds += d_o[i * d + e] * (v[j * d + e] - mean_v[e]);
        expected += scale * ds / n * k[j * d + c];
      }
      CHECK(g.dq[i * d + c] == doctest::Approx(expected).epsilon(1e-13).scale(1.0));
    }
}

TEST_CASE("fp64 CPU backward: a length-1 sequence passes dO through to dV and nothing else") {
  // One key: P = 1 whatever the scores, so O = V, dV = dO, and dS = P ∘ (dP - D) = 0 because
  // D = dO · O = dO · V = dP: dQ = dK = 0 (the case the rule's floor exists for).
  for (const bool causal : {false, true}) {
    Problem shape = multi_head_problem(DType::FP16, 2, 1, 2, 8);
    shape.causal = causal;
    const std::vector<double> q = wave(32, 0.9, 0.1, 3.0), k = wave(32, 1.7, 0.2, 3.0),
                              v = wave(32, 0.4, 0.6, 1.0), d_o = wave(32, 2.9, 0.7, 1.0);
    const AttentionBackwardFp64 g = cpu_attention_backward_fp64(shape, q, k, v, d_o);
    for (std::size_t i = 0; i < 32; ++i) {
      CHECK(g.dv[i] == doctest::Approx(d_o[i]).epsilon(1e-15));
      CHECK(std::abs(g.dq[i]) < 1e-14);
      CHECK(std::abs(g.dk[i]) < 1e-14);
    }
  }
}

TEST_CASE("fp64 CPU backward: the causal mask makes the last key's dV its own query's dO · P") {
  // Key N-1 is seen only by query N-1, so dV_{N-1} = P_{N-1,N-1} dO_{N-1}, and the first query
  // sees only key 0, so its dQ is 0 (a single key: dS = 0 as above).
  Problem shape = multi_head_problem(DType::FP16, 1, 5, 1, 3);
  shape.causal = true;
  const std::vector<double> q = wave(15, 0.8, 0.3, 1.5), k = wave(15, 1.1, 0.9, 1.5),
                            v = wave(15, 1.6, 0.2, 1.0), d_o = wave(15, 0.6, 0.4, 1.0);
  const AttentionBackwardFp64 g = cpu_attention_backward_fp64(shape, q, k, v, d_o);
  const double scale = 1 / std::sqrt(3.0);
  double scores[5], row_max = -INFINITY, sum = 0;
  for (int j = 0; j < 5; ++j) {
    scores[j] = 0;
    for (int c = 0; c < 3; ++c)
      scores[j] += q[4 * 3 + c] * k[j * 3 + c] * scale;
    row_max = std::max(row_max, scores[j]);
  }
  for (int j = 0; j < 5; ++j)
    sum += std::exp(scores[j] - row_max);
  const double p_last = std::exp(scores[4] - row_max) / sum;
  for (int c = 0; c < 3; ++c) {
    CHECK(g.dv[4 * 3 + c] == doctest::Approx(p_last * d_o[4 * 3 + c]).epsilon(1e-14));
    CHECK(std::abs(g.dq[c]) < 1e-14);
  }
}

TEST_CASE("fp64 CPU backward rejects mismatched buffers") {
  CHECK_THROWS_WITH_AS(cpu_attention_backward_fp64(multi_head_problem(DType::FP16, 1, 2, 1, 4),
                                                   {1.0}, {1.0}, {1.0}, {1.0}),
                       doctest::Contains("must each hold"), std::invalid_argument);
}
