// `explorer check`: one kernel, one shape, the §1.4 verdict and the error against the fp32
// reference, optionally with every tensor dumped as .npy for offline inspection. A backward step
// (its problem's pass is backward) gets the references' forward with the log-sum-exp, then its
// dQ, dK and dV judged each on its own (docs/spec/backward-track.md §2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/config.hpp"
#include "kernels/common/fp8_reference.hpp"
#include "kernels/common/problem.hpp"
#include "kernels/common/reference.hpp"
#include "kernels/common/reference_backward.hpp"
#include "kernels/common/registry.hpp"

namespace flashscope {

// How `explorer check` quantizes e4m3 inputs (fp8-track.md §1, §4.2): one descale per (sample,
// head), or per tile (one per Q tile of the kernel's packed B_r positions, one per K/V tile of B_c
// keys: steps with `.block_descales`), each optionally after the random-sign Hadamard rotation of
// Q and K over d_head (a quantizer option: every FP8 step runs rotated inputs).
enum class E4m3Quantization { per_head, per_head_hadamard, per_tile, per_tile_hadamard };
inline constexpr E4m3Quantization kAllE4m3Quantizations[] = {
    E4m3Quantization::per_head, E4m3Quantization::per_head_hadamard, E4m3Quantization::per_tile,
    E4m3Quantization::per_tile_hadamard};
// "per-head", "per-head+hadamard", "per-tile", "per-tile+hadamard", and back (nullopt otherwise).
std::string_view quantization_text(E4m3Quantization quantization);
std::optional<E4m3Quantization> quantization_from_string(std::string_view text);
constexpr bool rotates(E4m3Quantization q) {
  return q == E4m3Quantization::per_head_hadamard || q == E4m3Quantization::per_tile_hadamard;
}
constexpr bool per_tile(E4m3Quantization q) {
  return q == E4m3Quantization::per_tile || q == E4m3Quantization::per_tile_hadamard;
}
// The seed of the rotation's signs (fp8::rotation_signs): one rotation for Q and K of a check.
inline constexpr std::uint64_t kRotationSeed = 0x5EED;

struct CheckRequest {
  int step = 0;
  // Default: the step's built config for the problem's dtype and d_head. A config given must
  // have the problem's dtype and d_head (explorer check takes both from it).
  std::optional<KernelConfig> config;
  // The seed's unit-test shape (spec §1.2) by default; any problem the step runs (the causal mask,
  // grouped K/V heads), checked against the references of that problem.
  Problem problem = multi_head_problem(DType::FP16, 16, 2048, 16, 128);
  std::uint64_t seed = 0;
  float input_scale = 1.0f;  // inputs ~ N(0, input_scale²)
  std::string dump_dir;      // empty: no dump
  int device = 0;
  // e4m3 inputs only: the quantizer, and Q and K with outlier channels (kOutlierChannels channels
  // x kOutlierFactor, reference.hpp).
  E4m3Quantization quantization = E4m3Quantization::per_head;
  bool outliers = false;
};

// An e4m3 output against the fp64 attention on the inputs before quantization (and before the
// rotation, which leaves the attention unchanged): the error quantization and the kernel make
// together, the accuracy step's measure (fp8-track.md §4.2).
struct UnquantizedError {
  double max_abs = 0;
  double rms = 0;
};

struct CheckReport {
  const KernelEntry* kernel = nullptr;
  Problem problem;
  std::uint64_t seed = 0;
  CorrectnessVerdict verdict;  // a forward check's
  // A backward check's: dQ, dK and dV, each under backward-track.md §2.
  std::optional<BackwardCorrectnessVerdict> backward;
  // An e4m3 check's: fp8-track.md §2 against the exact answer R_ref and R_lp (then `verdict` is
  // left unset).
  std::optional<fp8::Verdict> fp8;
  std::optional<UnquantizedError> fp8_vs_unquantized;  // e4m3 checks
  E4m3Quantization quantization = E4m3Quantization::per_head;
  bool outliers = false;
  std::vector<std::string> dumped_files;

  bool passed() const {
    if (fp8) return fp8->passed;
    return backward ? backward->passed : verdict.passed;
  }
};

// The kernel a request names. Throws std::invalid_argument (a bad problem, a config of another
// dtype or d_head, several candidates) or KernelLookupError (not built, with the closest built
// configs).
const KernelEntry& resolve_check_kernel(const CheckRequest& request,
                                        const KernelRegistry& registry);

// The rules of launch validation that need no GPU (launch_refusal): throws LaunchValidationError
// (a std::invalid_argument) naming the rule the problem breaks.
void validate_request_problem(const KernelEntry& entry, const Problem& problem);

// The files a dump of a check of `pass` writes into CheckRequest::dump_dir, in this order.
const std::vector<std::string>& check_dump_file_names(Pass pass = Pass::forward);

// The seed dO is drawn with in a backward check: Q, K and V take 3s, 3s + 1 and 3s + 2 (as the
// sweep and a forward check do, so a row's input_seed gives the same Q, K and V), and dO a seed
// with the top bit set, which no 3s + k of a seed below 2^61 reaches.
constexpr std::uint64_t check_d_o_seed(std::uint64_t seed) {
  return seed | (std::uint64_t{1} << 63);
}

// e4m3 inputs on the device (codes [batch, seq_len, heads, d_head], one descale per (sample,
// head), or per block of q_rows / kv_rows positions: [batch, heads, blocks]; 0 is seq_len)
// copied back as fp8_reference.hpp's references read them: Q with problem.heads heads, K and V
// with problem.heads_kv. Synchronous (cudaMemcpy). Throws CudaError.
fp8::QuantizedInputs download_e4m3_inputs(const Problem& problem, const void* q, const void* k,
                                          const void* v, const float* q_descale,
                                          const float* k_descale, const float* v_descale,
                                          int q_rows = 0, int kv_rows = 0);
// `count` bf16 values on the device (an FP8 step's O), widened exactly to double.
std::vector<double> download_bf16(const void* data, std::int64_t count);

// Runs the check on the device. Throws NoCudaDevice, LaunchValidationError, CudaError.
CheckReport run_check(const CheckRequest& request);

}  // namespace flashscope
