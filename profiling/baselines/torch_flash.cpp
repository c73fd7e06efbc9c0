// The FlashAttention-2 forward compiled into PyTorch, run on flashscope's buffers without copying
// the inputs: at::from_blob views over our [b, N, h, d] memory, enqueued on our stream.
#include "profiling/baselines/torch_flash.hpp"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>

#include <array>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "kernels/common/cuda_check.hpp"

// PyTorch installs flash_api.h but not the namespace_config.h it includes, so the in-place entry
// point is declared here; PyTorch compiles FA2 with FLASH_NAMESPACE=pytorch_flash. The
// declaration is weak: if this libtorch exports no function with exactly these parameters (they
// are part of the mangled name), its address is null and the public op is used instead. The
// return type is not part of the mangled name, so the declaration is only made for the release
// it was checked against (2.11: 13 parameters, softcap included; 8 tensors returned).
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR == 11
#define FLASHSCOPE_TORCH_MHA_FWD_DECLARED 1
namespace pytorch_flash {
[[gnu::weak]] std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
                         at::Tensor, at::Tensor>
mha_fwd(const at::Tensor& q,                      // [b, N_q, h, d]
        const at::Tensor& k,                      // [b, N_k, h_k, d]
        const at::Tensor& v,                      // [b, N_k, h_k, d]
        std::optional<at::Tensor>& out,           // [b, N_q, h, d]
        std::optional<at::Tensor>& alibi_slopes,  // [h] or [b, h]
        float p_dropout, float softmax_scale, bool is_causal, int window_size_left,
        int window_size_right, float softcap, bool return_softmax,
        std::optional<at::Generator> generator);
// The backward's in-place entry (2.11: 19 parameters; dQ, dK, dV written into the tensors passed,
// 4 tensors returned: dQ, dK, dV and the softmax's row sums D). Weak for the same reason.
[[gnu::weak]] std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> mha_bwd(
    const at::Tensor& dout,                   // [b, N_q, h, d]
    const at::Tensor& q,                      // [b, N_q, h, d]
    const at::Tensor& k,                      // [b, N_k, h_k, d]
    const at::Tensor& v,                      // [b, N_k, h_k, d]
    const at::Tensor& out,                    // [b, N_q, h, d]
    const at::Tensor& softmax_lse,            // [b, h, N_q], fp32, natural log
    std::optional<at::Tensor>& dq,            // [b, N_q, h, d]
    std::optional<at::Tensor>& dk,            // [b, N_k, h_k, d]
    std::optional<at::Tensor>& dv,            // [b, N_k, h_k, d]
    std::optional<at::Tensor>& alibi_slopes,  // [h] or [b, h]
    float p_dropout, float softmax_scale, bool is_causal, int window_size_left,
    int window_size_right, float softcap, bool deterministic, at::Tensor philox_seed,
    at::Tensor philox_offset);
}  // namespace pytorch_flash
#else
#define FLASHSCOPE_TORCH_MHA_FWD_DECLARED 0
#endif

namespace flashscope {

std::string_view torch_flash_entry_name(TorchFlashEntry entry) {
  switch (entry) {
    case TorchFlashEntry::in_place:
      return "in_place";
    case TorchFlashEntry::sdpa_op:
      return "sdpa_op";
    case TorchFlashEntry::automatic:
      return "automatic";
  }
  return "?";
}

namespace {

bool in_place_entry_available() {
#if FLASHSCOPE_TORCH_MHA_FWD_DECLARED
  return &pytorch_flash::mha_fwd != nullptr;
#else
  return false;
#endif
}

bool in_place_backward_available() {
#if FLASHSCOPE_TORCH_MHA_FWD_DECLARED
  return &pytorch_flash::mha_bwd != nullptr;
#else
  return false;
#endif
}

// q, k, v, o: [b, N, h, d] views of our buffers. `is_causal`: FA2's causal mask, bottom-right
// aligned (the lower triangle for our equal Q and K lengths).
void forward_in_place(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                      const at::Tensor& o, float softmax_scale, bool is_causal) {
#if FLASHSCOPE_TORCH_MHA_FWD_DECLARED
  std::optional<at::Tensor> out = o;
  std::optional<at::Tensor> no_alibi_slopes;
  // The other results (log-sum-exp, RNG state) are not needed for inference.
  pytorch_flash::mha_fwd(q, k, v, out, no_alibi_slopes, /*p_dropout=*/0.0f, softmax_scale,
                         is_causal, /*window_size_left=*/-1, /*window_size_right=*/-1,
                         /*softcap=*/0.0f, /*return_softmax=*/false, std::nullopt);
#else
  (void)q, (void)k, (void)v, (void)o, (void)softmax_scale, (void)is_causal;
  throw std::logic_error("pytorch_flash::mha_fwd is not declared for this PyTorch");
#endif
}

void forward_via_sdpa_op(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const at::Tensor& o, float softmax_scale, bool is_causal) {
  const auto outputs = at::_scaled_dot_product_flash_attention(
      q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), /*dropout_p=*/0.0, is_causal,
      /*return_debug_mask=*/false, static_cast<double>(softmax_scale));
  // The op returns [b, h, N, d] over freshly allocated [b, N, h, d] memory.
  o.copy_(std::get<0>(outputs).transpose(1, 2));
}

// The backward's tensors, [b, N, h, d] views (Q, K, V, O, dO, dQ, dK, dV) and the [b, h, N] LSE.
struct BackwardViews {
  at::Tensor q, k, v, o, d_o, lse, dq, dk, dv;
};

// FA2's backward writing dQ, dK and dV in place. Without dropout the RNG state is never read; FA2
// still takes the two tensors, so empty ones made once per prepare are passed.
void backward_in_place(const BackwardViews& t, const at::Tensor& rng_seed,
                       const at::Tensor& rng_offset, float softmax_scale, bool is_causal) {
#if FLASHSCOPE_TORCH_MHA_FWD_DECLARED
  std::optional<at::Tensor> dq = t.dq, dk = t.dk, dv = t.dv;
  std::optional<at::Tensor> no_alibi_slopes;
  pytorch_flash::mha_bwd(t.d_o, t.q, t.k, t.v, t.o, t.lse, dq, dk, dv, no_alibi_slopes,
                         /*p_dropout=*/0.0f, softmax_scale, is_causal, /*window_size_left=*/-1,
                         /*window_size_right=*/-1, /*softcap=*/0.0f, /*deterministic=*/false,
                         rng_seed, rng_offset);
#else
  (void)t, (void)rng_seed, (void)rng_offset, (void)softmax_scale, (void)is_causal;
  throw std::logic_error("pytorch_flash::mha_bwd is not declared for this PyTorch");
#endif
}

// The public op allocates the gradients ([b, N, h, d] memory, returned as [b, h, N, d] views);
// they stay there while timed, and deliver_backward_outputs() copies them into ours for the check.
std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_via_sdpa_op(const BackwardViews& t,
                                                                    const at::Tensor& rng_seed,
                                                                    const at::Tensor& rng_offset,
                                                                    float softmax_scale,
                                                                    bool is_causal) {
  const int64_t seq_len = t.q.size(1);
  return at::_scaled_dot_product_flash_attention_backward(
      t.d_o.transpose(1, 2), t.q.transpose(1, 2), t.k.transpose(1, 2), t.v.transpose(1, 2),
      t.o.transpose(1, 2), t.lse, /*cum_seq_q=*/at::Tensor(), /*cum_seq_k=*/at::Tensor(),
      /*max_q=*/seq_len, /*max_k=*/seq_len, /*dropout_p=*/0.0, is_causal, rng_seed, rng_offset,
      static_cast<double>(softmax_scale));
}

class TorchFlashBaseline final : public BaselineAttention {
 public:
  explicit TorchFlashBaseline(TorchFlashEntry requested)
      : entry_(requested == TorchFlashEntry::automatic
                   ? (in_place_entry_available() ? TorchFlashEntry::in_place
                                                 : TorchFlashEntry::sdpa_op)
                   : requested) {}

  std::string_view name() const override { return "fa2"; }

  std::string version() const override { return std::string("PyTorch ") + TORCH_VERSION; }

  std::string description() const override {
    if (prepared_ && shape_.pass == Pass::backward)
      return std::string("FlashAttention-2 backward from PyTorch ") + TORCH_VERSION +
             (backward_entry_ == TorchFlashEntry::in_place
                  ? ", pytorch_flash::mha_bwd writing dQ, dK, dV in place"
                  : ", at::_scaled_dot_product_flash_attention_backward (its own gradient "
                    "buffers; copied into ours after the checked launch, not timed)");
    return std::string("FlashAttention-2 from PyTorch ") + TORCH_VERSION +
           (entry_ == TorchFlashEntry::in_place
                ? ", pytorch_flash::mha_fwd writing O in place"
                : ", at::_scaled_dot_product_flash_attention + copy into O");
  }

  std::string variant() const override {
    return std::string(torch_flash_entry_name(
        prepared_ && shape_.pass == Pass::backward ? backward_entry_ : entry_));
  }

  void prepare(const Problem& shape) override {
    prepared_ = false;
    cached_pointers_ = {};
    cached_backward_pointers_ = {};
    op_gradients_ = {};
    if (entry_ == TorchFlashEntry::in_place && !in_place_entry_available())
      throw BaselineUnavailable(
          std::string("PyTorch FA2 in place: this libtorch (") + TORCH_VERSION +
          ") exports no pytorch_flash::mha_fwd with the parameters flashscope was written for");
    if (const auto violation = problem_violation(shape))
      throw BaselineUnavailable("PyTorch FA2: " + *violation);
    // The backward's entry follows the forward's choice: in place where this libtorch exports
    // mha_bwd with the declared parameters, else the public op and three copies.
    backward_entry_ = entry_ == TorchFlashEntry::in_place && !in_place_backward_available()
                          ? TorchFlashEntry::sdpa_op
                          : entry_;
    // FlashAttention-2 has no FP8 kernels: e4m3 problems have no FA2 row (fp8-track.md §3).
    if (element_bytes(shape.dtype) != 2)
      throw BaselineUnavailable("PyTorch FA2 runs fp16 and bf16 only, not " +
                                std::string(dtype_lower_name(shape.dtype)));
    // FlashAttention-2's forward kernels exist for head dimensions up to 256.
    if (shape.d_head % 8 != 0 || shape.d_head > 256)
      throw BaselineUnavailable("PyTorch FA2 supports d_head a multiple of 8 up to 256, not " +
                                std::to_string(shape.d_head));

    int device = 0;
    FS_CUDA_CHECK(cudaGetDevice(&device));
    int major = 0;
    FS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (major < 8)
      throw BaselineUnavailable("PyTorch FA2 needs compute capability 8.0 or newer (device " +
                                std::to_string(device) + " is " + std::to_string(major) + ".x)");

    shape_ = shape;
    scalar_type_ = shape.dtype == DType::BF16 ? at::kBFloat16 : at::kHalf;
    device_ = static_cast<c10::DeviceIndex>(device);
    softmax_scale_ = 1.0f / std::sqrt(static_cast<float>(shape.d_head));
    if (shape.pass == Pass::backward) {
      const auto rng_options = at::TensorOptions().dtype(at::kLong).device(at::kCUDA, device_);
      rng_seed_ = at::zeros({}, rng_options);
      rng_offset_ = at::zeros({}, rng_options);
    }
    prepared_ = true;
  }

  void run_backward(const BaselineBackwardBuffers& buffers, cudaStream_t stream) override {
    if (!prepared_ || shape_.pass != Pass::backward)
      throw std::logic_error("PyTorch FA2: run_backward() before a backward prepare()");
    const std::array<const void*, 9> pointers{buffers.q,  buffers.k,   buffers.v,
                                              buffers.o,  buffers.d_o, buffers.lse,
                                              buffers.dq, buffers.dk,  buffers.dv};
    try {
      if (pointers != cached_backward_pointers_) wrap_backward(pointers);
      const c10::cuda::CUDAStreamGuard stream_guard(
          c10::cuda::getStreamFromExternal(stream, device_));
      if (backward_entry_ == TorchFlashEntry::in_place)
        backward_in_place(backward_views_, rng_seed_, rng_offset_, softmax_scale_, shape_.causal);
      else
        op_gradients_ = backward_via_sdpa_op(backward_views_, rng_seed_, rng_offset_,
                                             softmax_scale_, shape_.causal);
    } catch (const c10::Error& error) {
      throw std::runtime_error("PyTorch flash attention backward (" +
                               std::string(torch_flash_entry_name(backward_entry_)) +
                               ") failed: " + error.what_without_backtrace());
    }
  }

  void run(const void* q, const void* k, const void* v, void* o, cudaStream_t stream) override {
    if (!prepared_) throw std::logic_error("PyTorch FA2 reference: run() before prepare()");
    const std::array<const void*, 4> pointers{q, k, v, o};
    try {
      if (pointers != cached_pointers_) wrap(pointers);
      const c10::cuda::CUDAStreamGuard stream_guard(
          c10::cuda::getStreamFromExternal(stream, device_));
      if (entry_ == TorchFlashEntry::in_place)
        forward_in_place(views_[0], views_[1], views_[2], views_[3], softmax_scale_, shape_.causal);
      else
        forward_via_sdpa_op(views_[0], views_[1], views_[2], views_[3], softmax_scale_,
                            shape_.causal);
    } catch (const c10::Error& error) {
      throw std::runtime_error("PyTorch flash attention forward (" +
                               std::string(torch_flash_entry_name(entry_)) +
                               ") failed: " + error.what_without_backtrace());
    }
  }

  void deliver_backward_outputs(const BaselineBackwardBuffers& buffers,
                                cudaStream_t stream) override {
    if (backward_entry_ == TorchFlashEntry::in_place) return;  // written in place
    if (!std::get<0>(op_gradients_).defined())
      throw std::logic_error("PyTorch FA2: deliver_backward_outputs() before run_backward()");
    wrap_backward({buffers.q, buffers.k, buffers.v, buffers.o, buffers.d_o, buffers.lse, buffers.dq,
                   buffers.dk, buffers.dv});
    const c10::cuda::CUDAStreamGuard stream_guard(
        c10::cuda::getStreamFromExternal(stream, device_));
    backward_views_.dq.copy_(std::get<0>(op_gradients_).transpose(1, 2));
    backward_views_.dk.copy_(std::get<1>(op_gradients_).transpose(1, 2));
    backward_views_.dv.copy_(std::get<2>(op_gradients_).transpose(1, 2));
  }

 private:
  // Tensor views over our buffers, kept while the pointers stay the same: making them costs host
  // time between the caller's events.
  void wrap(const std::array<const void*, 4>& pointers) {
    const auto options = at::TensorOptions().dtype(scalar_type_).device(at::kCUDA, device_);
    // Q and O have `heads` heads, K and V `heads_kv` (FA2 runs grouped-query attention natively).
    const std::array<int64_t, 4> q_sizes{shape_.batch, shape_.seq_len, shape_.heads, shape_.d_head};
    const std::array<int64_t, 4> kv_sizes{shape_.batch, shape_.seq_len, shape_.heads_kv,
                                          shape_.d_head};
    for (std::size_t i = 0; i < pointers.size(); ++i)
      views_[i] = at::from_blob(const_cast<void*>(pointers[i]),
                                i == 1 || i == 2 ? kv_sizes : q_sizes, options);
    cached_pointers_ = pointers;
  }

  void wrap_backward(const std::array<const void*, 9>& pointers) {
    const auto options = at::TensorOptions().dtype(scalar_type_).device(at::kCUDA, device_);
    const std::array<int64_t, 4> q_sizes{shape_.batch, shape_.seq_len, shape_.heads, shape_.d_head};
    const std::array<int64_t, 4> kv_sizes{shape_.batch, shape_.seq_len, shape_.heads_kv,
                                          shape_.d_head};
    const auto view = [&](const void* pointer, const std::array<int64_t, 4>& sizes) {
      return at::from_blob(const_cast<void*>(pointer), sizes, options);
    };
    BackwardViews& t = backward_views_;
    t.q = view(pointers[0], q_sizes);
    t.k = view(pointers[1], kv_sizes);
    t.v = view(pointers[2], kv_sizes);
    t.o = view(pointers[3], q_sizes);
    t.d_o = view(pointers[4], q_sizes);
    const std::array<int64_t, 3> lse_sizes{shape_.batch, shape_.heads, shape_.seq_len};
    t.lse = at::from_blob(const_cast<void*>(pointers[5]), lse_sizes, options.dtype(at::kFloat));
    t.dq = view(pointers[6], q_sizes);
    t.dk = view(pointers[7], kv_sizes);
    t.dv = view(pointers[8], kv_sizes);
    cached_backward_pointers_ = pointers;
  }

  TorchFlashEntry entry_;  // as requested, with automatic resolved
  TorchFlashEntry backward_entry_ = TorchFlashEntry::sdpa_op;  // what run_backward() calls
  bool prepared_ = false;
  Problem shape_;
  at::ScalarType scalar_type_ = at::kHalf;
  c10::DeviceIndex device_ = 0;
  float softmax_scale_ = 1.0f;
  std::array<at::Tensor, 4> views_;
  std::array<const void*, 4> cached_pointers_{};
  BackwardViews backward_views_;
  std::array<const void*, 9> cached_backward_pointers_{};
  at::Tensor rng_seed_, rng_offset_;  // FA2's RNG state arguments, unread without dropout
  // The public op's gradients of the last run_backward() (sdpa_op), [b, h, N, d] views.
  std::tuple<at::Tensor, at::Tensor, at::Tensor> op_gradients_;
};

}  // namespace

std::unique_ptr<BaselineAttention> make_torch_flash_baseline(TorchFlashEntry entry) {
  return std::make_unique<TorchFlashBaseline>(entry);
}

}  // namespace flashscope
