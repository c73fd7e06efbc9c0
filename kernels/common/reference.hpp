// Reference attention implementations and the correctness rule of spec §1.4.
//  - cpu_attention_fp64: exact enough to check the others, for small shapes.
//  - gpu_reference_attention: a plainly written kernel with fp32 accumulation, for any shape.
//    In `low_precision` mode it rounds S, the normalised P and O to the input dtype (the
//    "low-precision reference" R_lp); otherwise everything stays fp32 until the final cast
//    (the "fp32-upcast reference" R_32).
//  Both apply the causal mask when `problem.causal`: key j > query i gets probability 0, and
//  both run grouped-query problems (K/V head h / group_size for query head h).
//  - check_against_references: err_kernel = max|O - R_lp|, err_ref = max|R_lp - R_32|,
//    pass iff err_kernel <= 2 * err_ref (and nothing is NaN).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config.hpp"
#include "problem.hpp"

namespace flashscope {

// Q and O are contiguous [batch, seq_len, heads, d_head], K and V [batch, seq_len, heads_kv,
// d_head] (query head h reads K/V head h / group_size); softmax scale 1/sqrt(d). A forward problem.
std::vector<double> cpu_attention_fp64(const Problem& problem, const std::vector<double>& q,
                                       const std::vector<double>& k, const std::vector<double>& v);

enum class ReferencePrecision { low_precision, fp32 };

// q, k, v, o are device pointers of the problem's dtype, laid out as for cpu_attention_fp64.
// Asynchronous on `stream`.
void gpu_reference_attention(const Problem& problem, ReferencePrecision precision, const void* q,
                             const void* k, const void* v, void* o, cudaStream_t stream = nullptr);

// Fills `count` elements of `dtype` at `data` with standard-normal values times `scale`,
// a pure function of (seed, index).
void fill_random_normal(void* data, DType dtype, std::int64_t count, std::uint64_t seed,
                        float scale, cudaStream_t stream = nullptr);

// How fill_random_e4m3 scales: one amax per (sample, head), the FP8 track's quantizer, or one
// per tensor, written into every (sample, head)'s descale: the form cuDNN's FP8 attention takes
// (one descale per tensor), so a sweep can time it on the very inputs the steps get.
enum class E4m3Scaling { per_head, per_tensor };

// e4m3 inputs [batch, seq_len, heads, d_head] as the FP8 track quantizes them (docs/spec/
// fp8-track.md §1): fill_random_normal's N(0, scale²) values, drawn in fp32 from the same
// (seed, index), quantized per (sample, head) with amax = max |x|, codes = x / descale rounded to
// nearest and saturating, descale = amax / 448 (1 for an all-zero head) into `descales`
// [batch, heads]. per_tensor takes amax over the whole tensor instead (every descale equal). The
// FP8 references (fp8_reference.hpp) take the codes and descales back.
void fill_random_e4m3(void* codes, float* descales, int batch, int seq_len, int heads, int d_head,
                      std::uint64_t seed, float scale, cudaStream_t stream = nullptr,
                      E4m3Scaling scaling = E4m3Scaling::per_head);
// ---- The accuracy step's quantizer (docs/spec/fp8-track.md §2, §4.2) ----------------------------
//
// The same inputs in three stages on the device, so that the unquantized values stay for the
// error against them: fp32 values (fill_random_fp32), optionally rotated (rotate_rows_fp32), then
// quantized per block of positions (quantize_e4m3).

// Inputs with outlier channels (fp8-track.md §2): kOutlierChannels channels of every row of Q and
// K multiplied by kOutlierFactor, channel i = (i · d_head / kOutlierChannels + 5) mod d_head: one
// per quarter of the row, the same in every (sample, head), as the large channels of a trained
// model's queries and keys are.
inline constexpr int kOutlierChannels = 4;
inline constexpr float kOutlierFactor = 20.0f;
constexpr int outlier_channel(int i, int d_head) {
  return (i * d_head / kOutlierChannels + 5) % d_head;
}

// fill_random_normal's N(0, scale²) values in fp32 (the same value for each (seed, index)) into
// `values` [batch, seq_len, heads, d_head]; with `outliers` the channels above multiplied.
void fill_random_fp32(float* values, int batch, int seq_len, int heads, int d_head,
                      std::uint64_t seed, float scale, bool outliers,
                      cudaStream_t stream = nullptr);
// Every d_head-long row of `values` ([rows, d_head], d_head a power of two up to 256) becomes
// H · (signs ∘ row) / sqrt(d_head), fp8::rotate_rows' rotation by the fast Walsh–Hadamard
// transform; `signs` is a device array of d_head floats ±1 (fp8::rotation_signs).
void rotate_rows_fp32(float* values, std::int64_t rows, int d_head, const float* signs,
                      cudaStream_t stream = nullptr);
// fp8::quantize on the device: for each (sample, head, block of `block_rows` positions) amax =
// max |x|, descale = amax / 448 (1 for an all-zero block) into `descales` [batch, heads,
// ceil(seq_len / block_rows)], codes = x / descale rounded to nearest, saturating.
// block_rows = seq_len is one descale per (sample, head), the descales fill_random_e4m3 writes.
// power_of_two_ratios: each block's descale is instead the head's (its largest, amax / 448 over
// the whole head) times the largest 2^-k (k >= 0) that still covers the block's amax, so that
// the ratio of any two of a head's descales is a power of two. Step 31 folds V's ratio
// v_j / v_max into P before P's e4m3 rounding (docs/versions/31.md): a power of two keeps that
// product exact where P is, a row's largest probability (2^8 · 1) among them, as step 29 had
// it; any other ratio rounds it. It costs the block at most one binade of e4m3's range.
void quantize_e4m3(const float* values, void* codes, float* descales, int batch, int seq_len,
                   int heads, int d_head, int block_rows, cudaStream_t stream = nullptr,
                   bool power_of_two_ratios = false);

// bf16 out[i] = descale x decode(codes[i]) for `count` e4m3 codes (device pointers): an FP8 output
// (cuDNN's FP8 attention on Hopper writes O in e4m3) in the form the FP8 check reads.
void dequantize_e4m3_to_bf16(const void* codes, float descale, void* out, std::int64_t count,
                             cudaStream_t stream = nullptr);
// Writes NaN into every element, so an element a kernel never wrote fails the check.
void poison_output(void* data, DType dtype, std::int64_t count, cudaStream_t stream = nullptr);

struct ErrorStats {
  double max_abs = 0;
  double mean_abs = 0;
  std::int64_t nan_count = 0;
};

// Element-wise |a - b| statistics over `count` elements (device pointers). Synchronous.
ErrorStats compare_outputs(const void* a, const void* b, DType dtype, std::int64_t count,
                           cudaStream_t stream = nullptr);

struct CorrectnessVerdict {
  bool passed = false;
  double err_kernel = 0;  // max |O - R_lp|
  double err_ref = 0;     // max |R_lp - R_32|
  ErrorStats vs_fp32;     // the kernel against R_32: max and mean error reported to users
  std::int64_t nan_count = 0;
  std::string summary() const;
};

// The pair of references for one input set; compute once, check many kernels against them.
class ReferenceOutputs {
 public:
  ReferenceOutputs(const Problem& problem, const void* q, const void* k, const void* v,
                   cudaStream_t stream = nullptr);
  ~ReferenceOutputs();
  ReferenceOutputs(const ReferenceOutputs&) = delete;
  ReferenceOutputs& operator=(const ReferenceOutputs&) = delete;

  const void* low_precision() const { return low_precision_; }
  const void* fp32() const { return fp32_; }
  double reference_gap() const { return reference_gap_; }  // err_ref

  // The §1.4 verdict for a kernel's output `o` of the same shape and dtype.
  CorrectnessVerdict check(const void* o, cudaStream_t stream = nullptr) const;

 private:
  Problem problem_;
  void* low_precision_ = nullptr;
  void* fp32_ = nullptr;
  double reference_gap_ = 0;
};

}  // namespace flashscope
