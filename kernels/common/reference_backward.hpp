// Reference attention backward passes and the correctness rule of docs/spec/backward-track.md §2.
//  - cpu_attention_backward_fp64: the exact gradients (fp64) of small problems; it runs the
//    forward itself, so it needs no log-sum-exp from anywhere.
//  - gpu_reference_forward_with_lse: a plainly written forward with fp32 accumulation that also
//    writes the row log-sum-exp, so a backward check depends on no forward step.
//  - gpu_reference_attention_backward: a plainly written backward with fp32 accumulation, for any
//    shape, in two modes. fp32 (G_32): everything stays fp32 until the final cast, and L and
//    D = rowsum(dO ∘ O) are recomputed from Q, K, V and dO. low_precision (G_lp): the backward a
//    straightforward 16-bit implementation computes from the forward's outputs, as PyTorch's math
//    backend does: the given O and L are used, P and dS are rounded to the input dtype before
//    they enter a product, and every sum is accumulated in fp32.
//  All of them apply the causal mask when `shape.causal`: key j > query i gets probability 0.
//  - BackwardReferenceOutputs: both GPU references of one input set, computed once; its check()
//    gives the verdict for a kernel's dQ, dK and dV, each judged on its own.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config.hpp"
#include "reference.hpp"

namespace flashscope {

// The exact backward of one problem, plus the forward it differentiates: o and the gradients are
// contiguous [batch, seq_len, heads, d_head], lse is [batch, heads, seq_len] (natural log).
struct AttentionBackwardFp64 {
  std::vector<double> o;
  std::vector<double> lse;
  std::vector<double> dq;
  std::vector<double> dk;
  std::vector<double> dv;
};

// Inputs are contiguous [batch, seq_len, heads, d_head], softmax scale 1/sqrt(d_head); d_o is the
// gradient of the loss with respect to the attention output. Computes S, L, P, O, D = rowsum(dO ∘
// O), dP, dS and the three gradients in fp64 (backward-track.md §1).
AttentionBackwardFp64 cpu_attention_backward_fp64(const Problem& shape,
                                                  const std::vector<double>& q,
                                                  const std::vector<double>& k,
                                                  const std::vector<double>& v,
                                                  const std::vector<double>& d_o);

// The forward with fp32 accumulation (the R_32 of kernel-progression.md §1.4): o (device,
// `dtype`, [batch, seq_len, heads, d_head]) rounded from fp32 once, and lse (device, fp32,
// [batch, heads, seq_len]) = m + ln(sum_j exp(s_j - m)), s = Q·Kᵀ / sqrt(d_head): what a forward
// step writes to ForwardArgs::softmax_lse. Asynchronous on `stream`.
void gpu_reference_forward_with_lse(const Problem& shape, DType dtype, const void* q, const void* k,
                                    const void* v, void* o, float* lse,
                                    cudaStream_t stream = nullptr);

// dq, dk, dv (device, `dtype`) from q, k, v, o, d_o (device, `dtype`) and lse (device, fp32
// [batch, heads, seq_len]). In fp32 mode o and lse are not read (nullptr allowed): L and D are
// recomputed in fp32, D as rowsum(P ∘ dP), which equals rowsum(dO ∘ O) for the exact O. Allocates
// and frees a small fp32 buffer (L and D) on `stream`. Asynchronous on `stream`.
void gpu_reference_attention_backward(const Problem& shape, DType dtype,
                                      ReferencePrecision precision, const void* q, const void* k,
                                      const void* v, const void* o, const void* d_o,
                                      const float* lse, void* dq, void* dk, void* dv,
                                      cudaStream_t stream = nullptr);

// The verdict for one gradient G (dQ, dK or dV) under backward-track.md §2.
struct GradientVerdict {
  bool passed = false;
  double err_kernel = 0;  // max |G - G_32|
  double err_ref = 0;     // max |G_lp - G_32|
  double floor = 0;       // the absolute floor added to 2 · err_ref
  ErrorStats vs_fp32;     // the kernel against G_32: max and mean error reported to users
  std::int64_t nan_count = 0;
  double tolerance() const { return 2 * err_ref + floor; }
  // err_kernel / err_ref (0 when both are 0): pass needs <= 2, up to the floor.
  double ratio() const;
};

struct BackwardCorrectnessVerdict {
  bool passed = false;  // all three
  GradientVerdict dq;
  GradientVerdict dk;
  GradientVerdict dv;
  std::string summary() const;
};

// The pair of reference gradients for one input set (q, k, v, d_o and the forward's o and lse, all
// device pointers); compute once, check many kernels against them.
//
// The rule (backward-track.md §2), for each of dQ, dK and dV separately: pass iff no element is
// NaN and max|G - G_32| <= 2 · max|G_lp - G_32| + floor. The floor is 2^-20 (about 1e-6) times
// the largest |G_32| element over all three gradients: it is there for a gradient that is zero in
// both references (dQ and dK of a length-1 problem, where P = 1 and dS = P ∘ (dP - D) = 0 exactly),
// which a kernel computes as a difference of two fp32 sums in another order and so gets as
// rounding noise, never as exact zeros. At 2^-20 of the problem's gradient scale it is far below
// one fp16 (2^-11) or bf16 (2^-8) rounding unit of any gradient that matters, so it loosens
// nothing else.
class BackwardReferenceOutputs {
 public:
  static constexpr double kRelativeFloor = 0x1p-20;

  BackwardReferenceOutputs(const Problem& shape, DType dtype, const void* q, const void* k,
                           const void* v, const void* o, const void* d_o, const float* lse,
                           cudaStream_t stream = nullptr);
  ~BackwardReferenceOutputs();
  BackwardReferenceOutputs(const BackwardReferenceOutputs&) = delete;
  BackwardReferenceOutputs& operator=(const BackwardReferenceOutputs&) = delete;

  // Gradient g: 0 = dQ, 1 = dK, 2 = dV.
  const void* low_precision(int g) const { return low_precision_[g]; }
  const void* fp32(int g) const { return fp32_[g]; }
  double reference_gap(int g) const { return reference_gap_[g]; }  // max|G_lp - G_32|
  double floor() const { return floor_; }

  // The verdict for a kernel's dq, dk, dv of the same shape and dtype.
  BackwardCorrectnessVerdict check(const void* dq, const void* dk, const void* dv,
                                   cudaStream_t stream = nullptr) const;

 private:
  Problem shape_;
  DType dtype_;
  void* low_precision_[3] = {};
  void* fp32_[3] = {};
  double reference_gap_[3] = {};
  double floor_ = 0;
};

}  // namespace flashscope
