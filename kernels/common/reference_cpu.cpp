#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/common/reference.hpp"

namespace flashscope {

std::vector<double> cpu_attention_fp64(const Problem& shape, const std::vector<double>& q,
                                       const std::vector<double>& k, const std::vector<double>& v) {
  if (const auto violation = problem_violation(shape))
    throw std::invalid_argument("cpu_attention_fp64: " + *violation);
  const auto count = static_cast<std::size_t>(shape.query_elements());
  const auto kv_count = static_cast<std::size_t>(shape.key_value_elements());
  if (q.size() != count || k.size() != kv_count || v.size() != kv_count)
    throw std::invalid_argument(
        "cpu_attention_fp64: q must hold batch x seq_len x heads x d_head = " +
        std::to_string(count) +
        " elements, k and v batch x seq_len x heads_kv x d_head = " + std::to_string(kv_count));
  const int n = shape.seq_len;
  const int d = shape.d_head;
  const int group = shape.group_size();
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto at = [&](int b, int s, int h) {
    return ((static_cast<std::size_t>(b) * n + s) * shape.heads + h) * d;
  };
  const auto kv_at = [&](int b, int s, int h) {
    return ((static_cast<std::size_t>(b) * n + s) * shape.heads_kv + h / group) * d;
  };
  std::vector<double> o(count);
  std::vector<double> scores(static_cast<std::size_t>(n));
  for (int b = 0; b < shape.batch; ++b) {
    for (int h = 0; h < shape.heads; ++h) {
      for (int i = 0; i < n; ++i) {
        // The causal mask gives keys j > i probability 0; Q and K have one length, so the
        // bottom-right aligned mask is the plain lower triangle, diagonal included.
        const int keys = shape.causal ? i + 1 : n;
        const double* q_row = &q[at(b, i, h)];
        double row_max = -INFINITY;
        for (int j = 0; j < keys; ++j) {
          const double* k_row = &k[kv_at(b, j, h)];
          double dot = 0;
          for (int c = 0; c < d; ++c)
            dot += q_row[c] * k_row[c];
          scores[j] = dot * scale;
          row_max = std::max(row_max, scores[j]);
        }
        double row_sum = 0;
        for (int j = 0; j < keys; ++j)
          row_sum += scores[j] = std::exp(scores[j] - row_max);
        double* o_row = &o[at(b, i, h)];
        for (int j = 0; j < keys; ++j) {
          const double* v_row = &v[kv_at(b, j, h)];
          const double p = scores[j] / row_sum;
          for (int c = 0; c < d; ++c)
            o_row[c] += p * v_row[c];
        }
      }
    }
  }
  return o;
}

}  // namespace flashscope
