// The argument record every backward step receives (docs/spec/backward-track.md §1): the forward's
// inputs and outputs, the gradient of the loss with respect to O, the forward's row log-sum-exp,
// the three gradients to write and a workspace the step partitions as it needs.
#pragma once

#include <cstdint>

namespace flashscope {

// Q, K, V, O, dO and the gradients dQ, dK, dV are [batch, seq_len, heads, d_head] tensors of the
// input dtype (fp16 or bf16) with a contiguous d_head. Q, O, dO and dQ share the first stride
// triple (n_heads heads); K, V, dK and dV share the second (`kv_*`, n_kv_heads heads). Queries and
// keys have one length, seq_len.
struct BackwardArgs {
  const void* Q;
  const void* K;
  const void* V;
  const void* O;   // the forward's output for these Q, K, V
  const void* dO;  // dLoss/dO
  // The forward's natural-log log-sum-exp of each scaled score row, L = m + ln(sum_j exp(s_j - m))
  // with s = Q·Kᵀ / sqrt(d_head): fp32 [batch, n_heads, seq_len], contiguous (the layout
  // ForwardArgs::softmax_lse is written in). The backward recomputes P = exp(s - L) from it.
  const float* softmax_lse;
  void* dQ;
  void* dK;
  void* dV;
  // Scratch memory of KernelEntry::backward_workspace_bytes(args) bytes, 256-byte aligned
  // (cudaMalloc's alignment). The step partitions it (an fp32 dQ accumulator, D = rowsum(dO ∘ O),
  // ...); its content on entry does not matter: the launch initializes what it reads.
  void* workspace;
  std::int64_t batch_stride;     // elements between samples of Q, O, dO and dQ
  std::int64_t seq_stride;       // elements between sequence positions of Q, O, dO and dQ
  std::int64_t head_stride;      // elements between heads of Q, O, dO and dQ
  std::int64_t kv_batch_stride;  // elements between samples of K, V, dK and dV
  std::int64_t kv_seq_stride;    // elements between sequence positions of K, V, dK and dV
  std::int64_t kv_head_stride;   // elements between heads of K, V, dK and dV
  int batch;
  int seq_len;
  int n_heads;     // query heads
  int n_kv_heads;  // K/V heads; a step without grouped-query support needs n_kv_heads == n_heads
  // 1: causal attention, query i attends to keys j <= i (Q and K have one length, so the
  // bottom-right aligned mask is the lower triangle, diagonal included).
  int causal;
};

}  // namespace flashscope
