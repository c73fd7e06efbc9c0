// The FP8 track's host side (docs/spec/fp8-track.md): the e4m3 format, the quantizer the harness
// uses for its own inputs (per (sample, head) or per block of sequence positions), dequantization,
// the two references of the correctness rule and the rule itself. Plain C++ on the CPU, in fp64
// where the spec asks for the exact answer: it is the oracle an FP8 kernel is checked against, so
// it shares no code with one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/problem.hpp"

namespace flashscope::fp8 {

// ---- The e4m3 format (fp8-track.md §1) -------------------------------------------------------
//
// 1 sign bit, 4 exponent bits (bias 7), 3 mantissa bits; "fn": no infinity, and only S.1111.111
// is NaN, so the exponent field 15 holds finite values up to 1.75 x 2^8 = 448. Exponent field 0
// holds the subnormals m x 2^-9 (m = 1..7) and zero.

inline constexpr double kMax = 448.0;
inline constexpr double kMinSubnormal = 0x1p-9;  // 2^-9, code 0x01
inline constexpr double kMinNormal = 0x1p-6;     // 2^-6, code 0x08
inline constexpr std::uint8_t kMaxCode = 0x7E;   // +448
inline constexpr std::uint8_t kNaNCode = 0x7F;   // +NaN (0xFF is -NaN)

// The value of a code: exact in a double. NaN for 0x7F and 0xFF (negative for 0xFF).
double decode(std::uint8_t code);
// The code nearest to `value`, ties to the even code (the one whose mantissa's last bit is 0),
// saturating: every finite value beyond ±448 and ±infinity give ±448, as the hardware's
// `cvt.rn.satfinite` does (e4m3 has no infinity to overflow to). NaN gives the NaN code of its
// sign; -0.0 gives 0x80.
std::uint8_t encode(double value);
// decode(encode(value)): `value` rounded onto the e4m3 grid.
double round_to_e4m3(double value);

// `value` rounded to bfloat16 (nearest, ties to even; NaN stays NaN), the FP8 track's output.
double round_to_bf16(double value);

// ---- Quantization (fp8-track.md §1, §4) -------------------------------------------------------

// An e4m3 tensor [batch, seq_len, heads, d_head] and its fp32 descales, one per (sample, head,
// block of `block_rows` sequence positions): the real value of an element is descale x
// decode(code). block_rows = seq_len is the first FP8 step's per-(sample, head) scaling, whose
// descales are the spec's [batch, heads] array; a smaller block is the accuracy step's per-tile
// scaling (one scale per Q tile or K/V tile: block_rows = B_r or B_c).
struct QuantizedTensor {
  int batch = 0, seq_len = 0, heads = 0, d_head = 0;
  int block_rows = 0;
  std::vector<std::uint8_t> codes;  // [batch, seq_len, heads, d_head]
  std::vector<float> descales;      // [batch, heads, blocks()]

  int blocks() const { return block_rows > 0 ? (seq_len + block_rows - 1) / block_rows : 0; }
  float descale_at(int b, int s, int h) const;
  double value_at(std::size_t index) const;  // descale x decode(code) of element `index`
};

// The harness's quantizer: for each (sample, head, block), amax = max |x| over the block's
// positions and d_head; scale = 448 / amax (the block's largest element lands on 448, the top of
// the range); code = encode(x x scale), rounded to nearest and saturating; descale = amax / 448
// in fp32. An all-zero block gets descale 1. Throws std::invalid_argument for a shape that does
// not match `values`, a block_rows outside 1..seq_len, or a non-finite value (an amax of infinity
// would make every scale 0).
QuantizedTensor quantize(const std::vector<double>& values, int batch, int seq_len, int heads,
                         int d_head, int block_rows);
// Per (sample, head): quantize(..., block_rows = seq_len).
QuantizedTensor quantize_per_head(const std::vector<double>& values, int batch, int seq_len,
                                  int heads, int d_head);
// Every element's descale x decode(code), in fp64.
std::vector<double> dequantize(const QuantizedTensor& tensor);

// ---- Incoherent processing (fp8-track.md §4.2) -------------------------------------------------
//
// The rotation R = H · diag(signs) / sqrt(d): H the d x d Sylvester Walsh–Hadamard matrix (entries
// ±1, H Hᵀ = d I), signs ±1 per channel. R is orthogonal, so rotating every row of Q and of K by
// the same R leaves Q·Kᵀ, and with it the attention, unchanged, while one large channel of a row is
// spread over all d channels before the row is rounded to e4m3.

// The ±1 signs of the rotation for `d_head` channels: a pure function of (d_head, seed), each sign
// the top bit of a 64-bit hash of (seed, channel). Throws std::invalid_argument unless d_head is a
// power of two (the fast transform's rule).
std::vector<int> rotation_signs(int d_head, std::uint64_t seed);

// Every `signs.size()`-long row of `values` (a [..., d] tensor, rows contiguous) becomes
// R · row = H · (signs ∘ row) / sqrt(d), by the fast Walsh–Hadamard transform: d · log2(d)
// additions and subtractions a row instead of d² multiply-adds. Applying it twice with the same
// signs is not the identity (R is not symmetric); unrotate_rows() is its inverse. Throws
// std::invalid_argument for a length that is not a power of two, a sign other than ±1, or a size
// that is not a whole number of rows.
void rotate_rows(std::vector<double>& values, const std::vector<int>& signs);
// The inverse: row = signs ∘ (H · rotated) / sqrt(d) (Rᵀ, since H is symmetric and diag(signs)
// is its own inverse).
void unrotate_rows(std::vector<double>& values, const std::vector<int>& signs);

// ---- References and the rule (fp8-track.md §2) -------------------------------------------------

// The quantized inputs of one forward problem: Q with `problem.heads` heads, K and V with
// `problem.heads_kv`, all [batch, seq_len, *, d_head] of the problem's shape.
struct QuantizedInputs {
  QuantizedTensor q, k, v;
};

// R_ref: attention in fp64 on the dequantized inputs (softmax scale 1/sqrt(d_head), the causal
// mask and grouped K/V heads as the problem says). `problem.dtype` must be e4m3.
std::vector<double> reference_exact(const Problem& problem, const QuantizedInputs& inputs);

// R_lp: the computation an FP8 kernel does, in its precisions: S = (Q·Kᵀ of the stored codes,
// accumulated in fp32) x q and k descales x the softmax scale; P = exp(S - rowmax) in fp32, its
// row sum taken before rounding; P x 2^8 rounded to e4m3 (the range the kernel puts P in before
// the second GEMM); O = Σ P' x V (codes x v descale, fp32) / (2^8 x row sum), rounded to bf16.
std::vector<double> reference_low_precision(const Problem& problem, const QuantizedInputs& inputs);

// A sample of query rows: the references below compute only these, so a sweep-sized problem
// (where the whole CPU reference would take minutes) is still checked before it is timed, on
// rows spread over the sequence and over its first and last (sample, head) pair.
struct QueryRow {
  int batch_index = 0, head = 0, position = 0;
};
struct RowSample {
  std::vector<QueryRow> rows;
};
// `rows_per_head` positions spread evenly from 0 to seq_len - 1 in (sample 0, head 0) and in
// (the last sample, the last head).
RowSample spread_rows(const Problem& problem, int rows_per_head);
// reference_exact and reference_low_precision at the sample's rows only, row after row
// ([rows, d_head]); each row equals the full reference's. Throw for a row outside the problem.
std::vector<double> reference_exact_rows(const Problem& problem, const QuantizedInputs& inputs,
                                         const RowSample& sample);
std::vector<double> reference_low_precision_rows(const Problem& problem,
                                                 const QuantizedInputs& inputs,
                                                 const RowSample& sample);
// The sample's rows of a full [batch, seq_len, heads, d_head] output, in the same order.
std::vector<double> gather_rows(const Problem& problem, const std::vector<double>& o,
                                const RowSample& sample);

// The factor P is scaled by before its e4m3 rounding: probabilities in [0, 1] become [0, 256],
// inside e4m3's range and clear of its subnormals for every p >= 2^-14.
inline constexpr double kProbabilityScale = 256.0;

struct Verdict {
  bool passed = false;
  double err_kernel = 0;  // max |O - R_ref|
  double err_lp = 0;      // max |R_lp - R_ref|
  double floor = 0;       // the absolute floor added to 2 x err_lp
  double rms_kernel = 0;  // RMS of O - R_ref, reported beside the max
  std::int64_t nan_count = 0;
  std::string summary() const;
};

// The absolute floor of the rule for outputs whose largest magnitude is `max_abs_reference`: one
// bfloat16 unit in the last place there (2^(e - 7) for 2^e <= max < 2^(e+1)), since a bf16 output
// cannot be closer to R_ref than half that, even where R_lp happens to equal R_ref. 2^-133 (bf16's
// smallest subnormal) for an all-zero reference.
double error_floor(double max_abs_reference);

// The rule: O passes iff no element is NaN and max|O - R_ref| <= 2 x max|R_lp - R_ref| + floor.
// `floor` < 0 means error_floor(max |R_ref|). Throws std::invalid_argument for sizes that differ.
Verdict check(const std::vector<double>& o, const std::vector<double>& reference_exact,
              const std::vector<double>& reference_low_precision, double floor = -1);

}  // namespace flashscope::fp8
