#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/common/reference_backward.hpp"

namespace flashscope {

AttentionBackwardFp64 cpu_attention_backward_fp64(const Problem& shape,
                                                  const std::vector<double>& q,
                                                  const std::vector<double>& k,
                                                  const std::vector<double>& v,
                                                  const std::vector<double>& d_o) {
  const auto count = static_cast<std::size_t>(shape.query_elements());
  if (q.size() != count || k.size() != count || v.size() != count || d_o.size() != count)
    throw std::invalid_argument(
        "cpu_attention_backward_fp64: q, k, v and d_o must each hold batch x seq_len x heads x "
        "d_head = " +
        std::to_string(count) + " elements");
  // K and V are indexed with Q's head count below; a grouped problem would read other heads.
  if (shape.heads_kv != shape.heads)
    throw std::invalid_argument(
        "cpu_attention_backward_fp64 runs multi-head attention only (heads_kv = heads)");
  const int n = shape.seq_len;
  const int d = shape.d_head;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto at = [&](int b, int s, int h) {
    return ((static_cast<std::size_t>(b) * n + s) * shape.heads + h) * d;
  };
  // Causal: query i attends to keys j <= i (one length for Q and K, so the bottom-right aligned
  // mask is the plain lower triangle, diagonal included); masked entries of P are 0.
  const auto keys_of = [&](int i) { return shape.causal ? i + 1 : n; };

  AttentionBackwardFp64 out;
  out.o.assign(count, 0.0);
  out.lse.assign(static_cast<std::size_t>(shape.batch) * shape.heads * n, 0.0);
  out.dq.assign(count, 0.0);
  out.dk.assign(count, 0.0);
  out.dv.assign(count, 0.0);
  const auto nn = static_cast<std::size_t>(n) * n;
  std::vector<double> p(nn), ds(nn);

  for (int b = 0; b < shape.batch; ++b) {
    for (int h = 0; h < shape.heads; ++h) {
      // Forward: S = scale·Q·Kᵀ, L = m + ln(sum exp(S - m)), P = exp(S - L), O = P·V.
      for (int i = 0; i < n; ++i) {
        const int keys = keys_of(i);
        double row_max = -INFINITY;
        for (int j = 0; j < keys; ++j) {
          double dot = 0;
          for (int c = 0; c < d; ++c)
            dot += q[at(b, i, h) + c] * k[at(b, j, h) + c];
          p[i * n + j] = dot * scale;
          row_max = std::max(row_max, p[i * n + j]);
        }
        double sum = 0;
        for (int j = 0; j < keys; ++j)
          sum += std::exp(p[i * n + j] - row_max);
        const double lse = row_max + std::log(sum);
        out.lse[(static_cast<std::size_t>(b) * shape.heads + h) * n + i] = lse;
        for (int j = 0; j < n; ++j)
          p[i * n + j] = j < keys ? std::exp(p[i * n + j] - lse) : 0.0;
        for (int j = 0; j < keys; ++j)
          for (int c = 0; c < d; ++c)
            out.o[at(b, i, h) + c] += p[i * n + j] * v[at(b, j, h) + c];
      }
      // Backward: D = rowsum(dO ∘ O), dP = dO·Vᵀ, dS = P ∘ (dP - D).
      for (int i = 0; i < n; ++i) {
        double row_d = 0;
        for (int c = 0; c < d; ++c)
          row_d += d_o[at(b, i, h) + c] * out.o[at(b, i, h) + c];
        for (int j = 0; j < n; ++j) {
          double dp = 0;
          for (int c = 0; c < d; ++c)
            dp += d_o[at(b, i, h) + c] * v[at(b, j, h) + c];
          ds[i * n + j] = p[i * n + j] * (dp - row_d);
        }
      }
      // dQ = scale·dS·K, dK = scale·dSᵀ·Q, dV = Pᵀ·dO.
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          const double pij = p[i * n + j];
          const double dsij = ds[i * n + j];
          for (int c = 0; c < d; ++c) {
            out.dq[at(b, i, h) + c] += scale * dsij * k[at(b, j, h) + c];
            out.dk[at(b, j, h) + c] += scale * dsij * q[at(b, i, h) + c];
            out.dv[at(b, j, h) + c] += pij * d_o[at(b, i, h) + c];
          }
        }
    }
  }
  return out;
}

}  // namespace flashscope
