// cuDNN's fused SDPA backward as PyTorch ships it (its cuDNN SDPA backend), called from C++ on our
// buffers: the "cudnn" baseline's backward where flashscope's own cuDNN graph has no plan. Only
// present when CMake found Torch (FLASHSCOPE_HAVE_TORCH_FA2).
#pragma once

#include <memory>

#include "profiling/baselines/baseline_attention.hpp"

namespace flashscope {

// A backward-only baseline named "cudnn": prepare() refuses forward problems, grouped K/V and
// FP8 (BaselineUnavailable, saying why). Its variant is "torch_cudnn"; its description names the
// cuDNN version this libtorch runs, which need not be the one flashscope's own graphs use.
std::unique_ptr<BaselineAttention> make_torch_cudnn_backward_baseline();

}  // namespace flashscope
