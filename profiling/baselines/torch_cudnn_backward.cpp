// cuDNN's SDPA backward through libtorch: at::_scaled_dot_product_cudnn_attention_backward on
// [b, h, N, d] views of our [b, N, h, d] memory, enqueued on our stream. PyTorch builds the cuDNN
// frontend's backward graph (the decomposed one the Hopper engines match, causal included), which
// flashscope's own backend-API graph does not (cudnn_sdpa.cpp builds the unified SDPA_BWD
// operation only).
#include "profiling/baselines/torch_cudnn_backward.hpp"

#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

#include "kernels/common/cuda_check.hpp"

namespace flashscope {

namespace {

std::string cudnn_version_text(long version) {
  // 9.x encodes major * 10000 + minor * 100 + patch.
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

class TorchCudnnBackward final : public BaselineAttention {
 public:
  std::string_view name() const override { return "cudnn"; }

  // The cuDNN PyTorch carries (not necessarily the one flashscope's own graph links).
  std::string version() const override {
    return "cuDNN " + cudnn_version_text(at::detail::getCUDAHooks().versionCuDNN()) + " (PyTorch " +
           TORCH_VERSION + ")";
  }

  std::string description() const override {
    return "cuDNN " + cudnn_version_text(at::detail::getCUDAHooks().versionCuDNN()) +
           " SDPA backward through PyTorch " + TORCH_VERSION +
           " (at::_scaled_dot_product_cudnn_attention_backward; its own gradient buffers, copied "
           "into ours after the checked launch, not timed)";
  }

  std::string variant() const override { return "torch_cudnn"; }

  void prepare(const Problem& shape) override {
    prepared_ = false;
    cached_pointers_ = {};
    gradients_ = {};
    if (const auto violation = problem_violation(shape))
      throw BaselineUnavailable("cuDNN SDPA backward through PyTorch: " + *violation);
    if (shape.pass != Pass::backward)
      throw BaselineUnavailable(
          "cuDNN SDPA through PyTorch is used for the backward only (the forward has "
          "flashscope's own cuDNN graph)");
    if (element_bytes(shape.dtype) != 2)
      throw BaselineUnavailable("cuDNN SDPA backward through PyTorch: fp16 and bf16 only, not " +
                                std::string(dtype_lower_name(shape.dtype)));
    if (shape.grouped())
      throw BaselineUnavailable(
          "cuDNN SDPA backward through PyTorch: flashscope passes equal Q and K/V head counts "
          "only (this problem has " +
          std::to_string(shape.heads) + " query heads on " + std::to_string(shape.heads_kv) +
          " K/V heads)");
    if (shape.d_head % 8 != 0 || shape.d_head > 128)
      throw BaselineUnavailable(
          "cuDNN SDPA backward through PyTorch: d_head a multiple of 8 up to 128, not " +
          std::to_string(shape.d_head));
    if (!at::detail::getCUDAHooks().hasCuDNN())
      throw BaselineUnavailable("cuDNN SDPA backward through PyTorch: this libtorch has no cuDNN");
    int device = 0;
    FS_CUDA_CHECK(cudaGetDevice(&device));
    shape_ = shape;
    scalar_type_ = shape.dtype == DType::BF16 ? at::kBFloat16 : at::kHalf;
    device_ = static_cast<c10::DeviceIndex>(device);
    softmax_scale_ = 1.0f / std::sqrt(static_cast<float>(shape.d_head));
    const auto rng_options = at::TensorOptions().dtype(at::kLong).device(at::kCUDA, device_);
    rng_seed_ = at::zeros({}, rng_options);
    rng_offset_ = at::zeros({}, rng_options);
    prepared_ = true;
  }

  void run(const void*, const void*, const void*, void*, cudaStream_t) override {
    throw std::logic_error("cuDNN SDPA backward through PyTorch: run() has no forward");
  }

  void run_backward(const BaselineBackwardBuffers& buffers, cudaStream_t stream) override {
    if (!prepared_)
      throw std::logic_error(
          "cuDNN SDPA backward through PyTorch: run_backward() before prepare()");
    const std::array<const void*, 9> pointers{buffers.q,  buffers.k,   buffers.v,
                                              buffers.o,  buffers.d_o, buffers.lse,
                                              buffers.dq, buffers.dk,  buffers.dv};
    if (pointers != cached_pointers_) wrap(pointers);
    const c10::cuda::CUDAStreamGuard stream_guard(
        c10::cuda::getStreamFromExternal(stream, device_));
    // PyTorch's cuDNN forward returns its statistics as [b, h, N, 1] (cuDNN's own layout); a
    // release that takes them as [b, h, N] is tried once when the first refuses, and kept.
    try {
      call_backward(lse_rank_ == 4 ? lse_ : lse_.squeeze(-1));
    } catch (const c10::Error& first) {
      if (lse_rank_chosen_)
        throw std::runtime_error("cuDNN SDPA backward through PyTorch failed: " +
                                 std::string(first.what_without_backtrace()));
      try {
        call_backward(lse_.squeeze(-1));
        lse_rank_ = 3;
      } catch (const c10::Error& second) {
        throw std::runtime_error(
            "cuDNN SDPA backward through PyTorch failed with the statistics as [b, h, N, 1]: " +
            std::string(first.what_without_backtrace()) +
            "; and as [b, h, N]: " + second.what_without_backtrace());
      }
    }
    lse_rank_chosen_ = true;
  }

  void deliver_backward_outputs(const BaselineBackwardBuffers& buffers,
                                cudaStream_t stream) override {
    if (!std::get<0>(gradients_).defined())
      throw std::logic_error(
          "cuDNN SDPA backward through PyTorch: deliver_backward_outputs() before run_backward()");
    wrap({buffers.q, buffers.k, buffers.v, buffers.o, buffers.d_o, buffers.lse, buffers.dq,
          buffers.dk, buffers.dv});
    const c10::cuda::CUDAStreamGuard stream_guard(
        c10::cuda::getStreamFromExternal(stream, device_));
    views_[5].copy_(std::get<0>(gradients_).transpose(1, 2));
    views_[6].copy_(std::get<1>(gradients_).transpose(1, 2));
    views_[7].copy_(std::get<2>(gradients_).transpose(1, 2));
  }

 private:
  // views_: Q, K, V, O, dO, dQ, dK, dV as [b, N, h, d]; lse_: [b, h, N, 1] fp32.
  void wrap(const std::array<const void*, 9>& pointers) {
    const auto options = at::TensorOptions().dtype(scalar_type_).device(at::kCUDA, device_);
    const std::array<int64_t, 4> sizes{shape_.batch, shape_.seq_len, shape_.heads, shape_.d_head};
    const std::array<std::size_t, 8> tensor_of_view{0, 1, 2, 3, 4, 6, 7, 8};
    for (std::size_t i = 0; i < views_.size(); ++i)
      views_[i] = at::from_blob(const_cast<void*>(pointers[tensor_of_view[i]]), sizes, options);
    const std::array<int64_t, 4> lse_sizes{shape_.batch, shape_.heads, shape_.seq_len, 1};
    lse_ = at::from_blob(const_cast<void*>(pointers[5]), lse_sizes, options.dtype(at::kFloat));
    cached_pointers_ = pointers;
  }

  // Views as [b, h, N, d] of the [b, N, h, d] memory.
  void call_backward(const at::Tensor& lse) {
    const int64_t n = shape_.seq_len;
    gradients_ = at::_scaled_dot_product_cudnn_attention_backward(
        views_[4].transpose(1, 2), views_[0].transpose(1, 2), views_[1].transpose(1, 2),
        views_[2].transpose(1, 2), views_[3].transpose(1, 2), lse, rng_seed_, rng_offset_,
        /*attn_bias=*/at::Tensor(), /*cum_seq_q=*/at::Tensor(), /*cum_seq_k=*/at::Tensor(),
        /*max_q=*/n, /*max_k=*/n, /*dropout_p=*/0.0, shape_.causal,
        static_cast<double>(softmax_scale_));
  }

  bool prepared_ = false;
  int lse_rank_ = 4;
  bool lse_rank_chosen_ = false;
  Problem shape_;
  at::ScalarType scalar_type_ = at::kHalf;
  c10::DeviceIndex device_ = 0;
  float softmax_scale_ = 1.0f;
  std::array<at::Tensor, 8> views_;
  at::Tensor lse_;
  at::Tensor rng_seed_, rng_offset_;  // unread without dropout
  std::array<const void*, 9> cached_pointers_{};
  std::tuple<at::Tensor, at::Tensor, at::Tensor> gradients_;  // of the last run_backward()
};

}  // namespace

std::unique_ptr<BaselineAttention> make_torch_cudnn_backward_baseline() {
  return std::make_unique<TorchCudnnBackward>();
}

}  // namespace flashscope
