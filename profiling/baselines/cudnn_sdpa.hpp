// cuDNN's fused scaled-dot-product-attention forward through the backend (graph) API.
// Only present when CMake found cuDNN (FLASHSCOPE_HAVE_CUDNN).
#pragma once

#include <memory>
#include <string_view>

#include "profiling/baselines/baseline_attention.hpp"

namespace flashscope {

// How the attention is described to cuDNN. Both are served by the same fused flash-attention
// engines; which one a given cuDNN accepts depends on its version.
enum class CudnnSdpaGraph {
  // One SDPA_FWD operation (cuDNN 9.13.1 and later, what cudnn-frontend picks there).
  unified,
  // matmul, scale, max/sub/exp/sum/log/add/div softmax, matmul: the pattern the fused engines
  // recognise, which cudnn-frontend emits before cuDNN 9.21 (later releases may drop it).
  composite,
  // unified where the loaded cuDNN has it, composite if that finds no engine.
  automatic,
};

std::string_view cudnn_sdpa_graph_name(CudnnSdpaGraph graph);

// The "cudnn" baseline. Needs no GPU until prepare().
std::unique_ptr<BaselineAttention> make_cudnn_sdpa_baseline(
    CudnnSdpaGraph graph = CudnnSdpaGraph::automatic);

}  // namespace flashscope
