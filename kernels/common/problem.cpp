#include "kernels/common/problem.hpp"

namespace flashscope {

std::string_view pass_name(Pass pass) {
  return pass == Pass::backward ? "backward" : "forward";
}

std::optional<Pass> pass_from_string(std::string_view text) {
  if (text == "forward") return Pass::forward;
  if (text == "backward") return Pass::backward;
  return std::nullopt;
}

Problem multi_head_problem(DType dtype, int batch, int seq_len, int heads, int d_head,
                           bool causal) {
  return Problem{.dtype = dtype,
                 .batch = batch,
                 .seq_len = seq_len,
                 .heads = heads,
                 .heads_kv = heads,
                 .d_head = d_head,
                 .causal = causal};
}

std::optional<std::string> problem_violation(const Problem& p) {
  if (!is_dtype(static_cast<int>(p.dtype)))
    return "dtype " + std::to_string(static_cast<int>(p.dtype)) + " is not " + dtype_choices_text();
  if (p.batch <= 0) return "batch " + std::to_string(p.batch) + " is not positive";
  if (p.seq_len <= 0) return "seq_len " + std::to_string(p.seq_len) + " is not positive";
  if (p.heads <= 0) return "heads " + std::to_string(p.heads) + " is not positive";
  if (p.d_head <= 0) return "d_head " + std::to_string(p.d_head) + " is not positive";
  if (p.heads_kv <= 0) return "heads_kv " + std::to_string(p.heads_kv) + " is not positive";
  if (p.heads_kv > p.heads)
    return "heads_kv " + std::to_string(p.heads_kv) + " exceeds heads " + std::to_string(p.heads) +
           ": K and V have at most as many heads as Q";
  if (p.heads % p.heads_kv != 0)
    return "heads " + std::to_string(p.heads) + " is not a multiple of heads_kv " +
           std::to_string(p.heads_kv) +
           ": each K/V head serves a whole group of query heads (grouped-query attention)";
  if (p.pass != Pass::forward && p.pass != Pass::backward)
    return "pass " + std::to_string(static_cast<int>(p.pass)) + " is not forward or backward";
  return std::nullopt;
}

double matmul_flops(const Problem& p) {
  const double forward = matmul_flops(p.batch, p.heads, p.seq_len, p.d_head);
  const double passes = p.pass == Pass::backward ? 2.5 : 1.0;
  return forward * passes * (p.causal ? 0.5 : 1.0);
}

double softmax_exponentials(const Problem& p) {
  const double scores = static_cast<double>(p.batch) * p.heads * p.seq_len * p.seq_len;
  return p.causal ? scores / 2 : scores;
}

double seed_attention_flops(const Problem& p) {
  if (p.pass == Pass::backward) return matmul_flops(p);
  const double full = seed_attention_flops(p.batch, p.heads, p.seq_len, p.d_head);
  return p.causal ? full / 2 : full;
}

}  // namespace flashscope
