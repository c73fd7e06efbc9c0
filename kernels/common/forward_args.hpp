// The argument record every kernel step receives (spec §2.5), passed as a __grid_constant__.
#pragma once

#include <cstdint>

namespace flashscope {

// Q, K, V and O are contiguous [batch, seq_len, heads, d_head] tensors sharing Q's strides.
struct ForwardArgs {
  const void* Q;
  const void* K;
  const void* V;
  void* O;
  std::int64_t batch_stride;  // elements between samples: seq_len * heads * d_head
  std::int64_t seq_stride;    // elements between sequence positions: heads * d_head
  std::int64_t head_stride;   // elements between heads: d_head
  int batch;
  int seq_len;
  int n_heads;
  int n_Q_blocks;   // ceil(seq_len / B_r)
  int n_KV_blocks;  // ceil(seq_len / B_c)
  // 1: causal attention, query i attends to keys j <= i (bottom-right aligned; Q and K have one
  // length). Only steps whose descriptor sets `.causal` read it; launch validation refuses a
  // causal launch of any other step, so steps 1-22 never see 1.
  int causal;
};

}  // namespace flashscope
