// The argument record every kernel step receives (spec §2.5), passed as a __grid_constant__.
#pragma once

#include <cstdint>

namespace flashscope {

// Q, K, V and O are [batch, seq_len, heads, d_head] tensors with a contiguous d_head. Q and O share
// the first stride triple; K and V share the second (`kv_*`), whose head count is n_kv_heads.
// Steps 1–25 run multi-head problems only (launch validation refuses a grouped one for them), so
// for them the two triples are equal and they read the first; the fields after `causal` were added
// for the steps after them and are set for every launch.
struct ForwardArgs {
  const void* Q;
  const void* K;
  const void* V;
  void* O;
  std::int64_t batch_stride;  // elements between samples of Q and O: seq_len * heads * d_head
  std::int64_t seq_stride;    // elements between sequence positions of Q and O: heads * d_head
  std::int64_t head_stride;   // elements between heads of Q and O: d_head
  int batch;
  int seq_len;
  int n_heads;      // query heads
  int n_Q_blocks;   // ceil(seq_len / B_r)
  int n_KV_blocks;  // ceil(seq_len / B_c)
  // 1: causal attention, query i attends to keys j <= i (bottom-right aligned; Q and K have one
  // length). Only steps whose descriptor sets `.causal` read it; launch validation refuses a
  // causal launch of any other step, so steps 1-22 never see 1.
  int causal;
  // Grouped-query attention: K and V have n_kv_heads heads (n_heads is a multiple of it) and query
  // head h reads K/V head h / (n_heads / n_kv_heads). Only steps whose descriptor sets
  // `.grouped_kv` run n_kv_heads != n_heads.
  int n_kv_heads;
  std::int64_t kv_batch_stride;  // elements between samples of K and V
  std::int64_t kv_seq_stride;    // elements between sequence positions of K and V
  std::int64_t kv_head_stride;   // elements between heads of K and V
  // Optional output of the steps whose descriptor sets `.writes_lse` (nullptr: not wanted): the
  // natural-log log-sum-exp of each scaled score row, L = m + log(sum_j exp(s_j - m)) with
  // s = Q·Kᵀ / sqrt(d_head), fp32 [batch, n_heads, seq_len] contiguous. The backward pass
  // recomputes P = exp(s - L) from it (docs/spec/backward-track.md §1).
  float* softmax_lse;
  // The fp32 descales of e4m3 inputs (docs/spec/fp8-track.md §1), nullptr for 16-bit inputs: one
  // per (sample, head), contiguous [batch, n_heads] for Q and [batch, n_kv_heads] for K and V; an
  // element's real value is its descale x its stored value. Only steps whose descriptor lists
  // DType::E4M3 read them.
  const float* q_descale;
  const float* k_descale;
  const float* v_descale;
  // Block descales (docs/spec/fp8-track.md §4.2, steps whose descriptor sets `.block_descales`):
  // one descale per block of q_descale_rows (K and V: kv_descale_rows) sequence positions of a
  // (sample, head), contiguous [batch, heads, ceil(seq_len / rows)]. seq_len (or 0: not e4m3) is
  // the per-(sample, head) layout above, the only one the other steps read; launch validation
  // refuses any other value for them.
  int q_descale_rows;
  int kv_descale_rows;
};

}  // namespace flashscope
