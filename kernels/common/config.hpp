// The kernel configuration record (spec §2): one value fully identifies a compiled kernel.
// It is a structural type, so it is used directly as a non-type template parameter of every
// kernel step, and its defaulted comparison gives the total order of spec §2.3.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace flashscope {

// Same integers as the framework's scalar-type enum (half = 5, bfloat16 = 15, float8_e4m3fn =
// 24), so demangled kernel names such as `FlashForwardKernelConfig{5, ...}` parse unchanged.
// E4M3 is the FP8 track's input (docs/spec/fp8-track.md §1): 8-bit e4m3fn (no infinity, one NaN
// pattern per sign, ±448 the largest finite value), stored with per-(sample, head) descales.
enum class DType : int { FP16 = 5, BF16 = 15, E4M3 = 24 };

// Which pass of attention a kernel computes: the forward (O and optionally the row log-sum-exp)
// or the backward (dQ, dK, dV from O, dO and the log-sum-exp; docs/spec/backward-track.md).
// Declared here because the compile-time rules of a config depend on it (static_config_violation);
// problem.hpp gives it its names.
enum class Pass : int { forward = 0, backward = 1 };

// Every dtype, in the record's order: the one list the dtype axis (problem_axes.cpp), the config
// parser and every message that lists the dtypes read, so a dtype added here is named everywhere.
inline constexpr DType kAllDTypes[] = {DType::FP16, DType::BF16, DType::E4M3};

std::string_view dtype_name(DType dtype);        // "FP16" / "BF16" / "E4M3"
std::string_view dtype_lower_name(DType dtype);  // "fp16" / "bf16" / "e4m3"
// A case-insensitive name ("fp16", "BF16", "e4m3" or its short name "fp8") or the scalar-type
// number (5, 15, 24); nullopt for anything else.
std::optional<DType> dtype_from_string(std::string_view text);
// "fp16, bf16 or e4m3 (fp8)": the accepted names, for messages.
std::string dtype_choices_text();

constexpr bool is_dtype(int value) {
  for (const DType dtype : kAllDTypes)
    if (static_cast<int>(dtype) == value) return true;
  return false;
}

// Bytes of one element of `dtype`: the one place the host asks (tensor sizes, TMA strides, SMEM
// budgets). 0 for a value that is not a dtype.
constexpr int element_bytes(DType dtype) {
  switch (dtype) {
    case DType::FP16:
    case DType::BF16:
      return 2;
    case DType::E4M3:
      return 1;
  }
  return 0;
}

// The dtype of O for inputs of `dtype`: the 16-bit steps write their input dtype; the FP8 track
// writes bf16 (fp8-track.md §1: an 8-bit output would lose what the fp32 accumulator kept).
constexpr DType output_dtype(DType dtype) {
  return dtype == DType::E4M3 ? DType::BF16 : dtype;
}

// Inputs that carry descale factors (fp8-track.md §1: the real value is descale x stored, one
// fp32 descale per (sample, head) for each of Q, K and V).
constexpr bool needs_descales(DType dtype) {
  return dtype == DType::E4M3;
}

struct KernelConfig {
  DType dtype;
  int d_head;
  int B_r;
  int B_c;
  int n_warps;
  bool async_copy;
  bool eager_load_blocks;
  bool swizzled;
  int Q_mma_load_K_fragments;
  int K_mma_load_K_fragments;
  int V_mma_load_K_fragments;
  bool mma_double_buffer_loads;
  bool optimized_softmax;
  // Hopper track (steps 17+, hopper-track.md §2). Both are 0 in an Ampere config (steps 1–16),
  // whose short form is therefore unchanged.
  int stages;         // K/V SMEM buffers in flight (1–4); >= 1 marks a Hopper config
  int consumer_regs;  // registers per consumer thread after setmaxnreg (0 = no reallocation)
  // Backward Hopper steps that declare it (StepDescriptor::deterministic_dq, B5 on;
  // backward-track.md §4): the contributions to each query block's dQ are added in one fixed order,
  // so repeated runs give bit-identical gradients. false in every other config, whose short form
  // and C++ literal are unchanged by it.
  bool deterministic = false;

  // Lexicographic over the 16 fields in declaration order; enums by value, false < true.
  constexpr auto operator<=>(const KernelConfig&) const = default;
};

// A Hopper-track config: wgmma, warpgroups and a K/V pipeline of `stages` buffers. Its Ampere-only
// fields (async_copy … optimized_softmax) are unused and must be unset.
constexpr bool is_hopper_config(const KernelConfig& c) {
  return c.stages > 0;
}

// ---- Derived quantities (spec §2.4, §2.5) -------------------------------------------------

// The 16-bit element the frozen kernels of steps 1–26 and B1, B2 size their tiles with (they run
// fp16 and bf16 only). Host code asks element_bytes(dtype) instead.
constexpr int kElementBytes = element_bytes(DType::FP16);

constexpr int threads_per_block(const KernelConfig& c) {
  return 32 * c.n_warps;
}
constexpr int query_rows_per_warp(const KernelConfig& c) {
  return c.B_r / c.n_warps;
}

// ---- Hopper constants (hopper-track.md §2) ------------------------------------------------

// Steps 17+ (wgmma, TMA, warp specialization) run Hopper configs on sm_90a only.
constexpr int kFirstHopperStep = 17;

constexpr int kWarpgroupWarps = 4;
constexpr int kWarpgroupRows = 64;  // the M of every wgmma: query rows per consumer warpgroup
// The largest dynamic shared memory a block may opt in to on sm_90 (H100, H200): 227 KB.
constexpr int kHopperMaxSmemBytes = 227 * 1024;
// The 128-byte swizzle repeats every 8 rows of 128 bytes; tiles that wgmma and TMA address with
// it start on 1024-byte boundaries, and the kernel aligns its dynamic SMEM base up to one.
constexpr int kHopperSmemAlignment = 1024;
// mbarriers (8 bytes each: full and empty per stage, Q) with room to spare.
constexpr int kHopperBarrierBytes = 256;
constexpr int kMaxRegistersPerSm = 65536;

// A forward consumer warpgroup owns 64 query rows of the B_r-row tile; a backward one owns 64 keys
// of the B_c-key KV block (its dK and dV rows; backward-track.md §4, B3 on).
constexpr int consumer_warpgroups(const KernelConfig& c, Pass pass = Pass::forward) {
  return (pass == Pass::forward ? c.B_r : c.B_c) / kWarpgroupRows;
}
// 1 when the CTA has a producer warpgroup (steps 19+ and B4+: n_warps = 4 · (consumers + 1)),
// else 0.
constexpr int producer_warpgroups(const KernelConfig& c, Pass pass = Pass::forward) {
  return c.n_warps / kWarpgroupWarps - consumer_warpgroups(c, pass);
}
// Registers per thread a kernel of `threads` threads starts with under __launch_bounds__(threads,
// 1): the register file shared out, in setmaxnreg's steps of 8 (168 for 384 threads).
constexpr int entry_registers(int threads) {
  return kMaxRegistersPerSm / threads / 8 * 8;
}

// Registers a producer thread keeps after setmaxnreg.dec when consumers take `consumer_regs`.
// setmaxnreg.inc only takes what the CTA's other warpgroups gave back, so the consumers' growth
// above the entry allocation must be paid for by the producer's shrinking below it (else the inc
// waits forever): at most entry − consumers · (consumer_regs − entry), and at most 40 since it
// only issues copies.
constexpr int producer_regs(const KernelConfig& c, Pass pass = Pass::forward) {
  if (c.consumer_regs == 0) return 0;
  const int entry = entry_registers(32 * c.n_warps);
  const int left = entry - consumer_warpgroups(c, pass) * (c.consumer_regs - entry);
  const int rounded = left / 8 * 8;
  return rounded > 40 ? 40 : rounded;
}

// Ampere: one buffer each for Q, K and V; O reuses Q's region. Hopper: Q plus `stages` K and V
// buffers, the alignment slack and the barriers; O reuses Q's region. Tiles hold the input dtype
// (1 byte in an E4M3 config); a step that keeps more tiles (step 22's own O tile, an FP8 step's
// transposed V) adds them in its rules.
constexpr int smem_bytes(const KernelConfig& c) {
  const int bytes = element_bytes(c.dtype);
  if (!is_hopper_config(c)) return (c.B_r + 2 * c.B_c) * c.d_head * bytes;
  return kHopperSmemAlignment + (c.B_r + 2 * c.stages * c.B_c) * c.d_head * bytes +
         kHopperBarrierBytes;
}

// Resident CTAs per SM as the seed's helper computes it: registers cap residency at two CTAs,
// eight warps or a shared-memory footprint that does not fit twice leave one.
constexpr int ctas_per_sm(const KernelConfig& c, int max_smem_per_sm_bytes) {
  if (c.n_warps == 8 || 2 * smem_bytes(c) > max_smem_per_sm_bytes) return 1;
  return 2;
}

// ---- Compile-time validity (spec §2.1) ------------------------------------------------------

// The rules of a Hopper config (hopper-track.md §2); "" when it satisfies them.
// A backward config's warpgroups split the B_c keys of its KV block instead of the B_r query rows
// (backward-track.md §1.2), so there B_c is the multiple of 64 and B_r the N of a wgmma.
constexpr const char* hopper_config_violation(const KernelConfig& c, Pass pass = Pass::forward) {
  if (c.async_copy || c.eager_load_blocks || c.swizzled || c.Q_mma_load_K_fragments != 0 ||
      c.K_mma_load_K_fragments != 0 || c.V_mma_load_K_fragments != 0 || c.mma_double_buffer_loads ||
      c.optimized_softmax)
    return "a Hopper config (stages >= 1) leaves the Ampere-only fields unset (no async, eager, "
           "swizzled, buffer or opt_softmax, load_0_0_0)";
  if (c.stages > 4) return "stages must be 1–4 (K/V buffers in flight)";
  if (c.deterministic && pass == Pass::forward)
    return "deterministic orders the backward's dQ additions; a forward config leaves it unset";
  if (c.n_warps % kWarpgroupWarps != 0 || c.n_warps < 4 || c.n_warps > 16)
    return "n_warps must be whole warpgroups (a multiple of 4) from 4 to 16";
  if (pass == Pass::forward) {
    if (c.B_r % kWarpgroupRows != 0 || c.B_r < 64 || c.B_r > 192)
      return "B_r must be 64 x consumer warpgroups: 64, 128 or 192";
    if (producer_warpgroups(c) != 0 && producer_warpgroups(c) != 1)
      return "n_warps must be 4 x B_r / 64 (consumer warpgroups only) or 4 x (B_r / 64 + 1) (one "
             "producer warpgroup more)";
    if (c.B_c < 16 || c.B_c > 256 || c.B_c % 16 != 0)
      return "B_c must be a multiple of 16 from 16 to 256 (the N of one wgmma)";
  } else {
    if (c.B_c % kWarpgroupRows != 0 || c.B_c < 64 || c.B_c > 192)
      return "B_c must be 64 x consumer warpgroups: 64, 128 or 192 (backward: a warpgroup owns 64 "
             "keys)";
    if (producer_warpgroups(c, pass) != 0 && producer_warpgroups(c, pass) != 1)
      return "n_warps must be 4 x B_c / 64 (consumer warpgroups only) or 4 x (B_c / 64 + 1) (one "
             "producer warpgroup more; backward)";
    if (c.B_r < 16 || c.B_r > 256 || c.B_r % 16 != 0)
      return "B_r must be a multiple of 16 from 16 to 256 (backward: the N of one wgmma)";
  }
  if (c.consumer_regs != 0) {
    if (producer_warpgroups(c, pass) != 1)
      return "consumer_regs (setmaxnreg) needs a producer warpgroup to take registers from";
    if (c.consumer_regs % 8 != 0 || c.consumer_regs < 24 || c.consumer_regs > 256)
      return "consumer_regs must be a multiple of 8 from 24 to 256 (setmaxnreg)";
    if (c.consumer_regs < entry_registers(32 * c.n_warps))
      return "consumer_regs must be at least the registers a thread starts with (setmaxnreg.inc "
             "only grows an allocation)";
    if (producer_regs(c, pass) < 24)
      return "consumer_regs needs more registers than the producer warpgroup can give back "
             "(it keeps at least 24 per thread; setmaxnreg.inc would wait forever)";
  }
  if (smem_bytes(c) > kHopperMaxSmemBytes)
    return "Q + stages x (K + V) + barriers exceed the 227 KB (232448-byte) shared memory a block "
           "may opt in to on sm_90";
  return "";
}

// Returns an empty string when the config can be instantiated, else the violated rule.
// constexpr so kernels can static_assert on it; the string form is for hosts and tests.
// One Ampere rule depends on the pass: a forward kernel's warps split the B_r query rows of its
// block, a backward kernel's warps split the B_c key rows of its KV block (dK and dV of a key
// row live in one warp's registers; docs/spec/backward-track.md §4), so each warp owns whole
// 16-row m-tiles of B_r or of B_c respectively.
constexpr const char* static_config_violation(const KernelConfig& c, Pass pass = Pass::forward) {
  auto load_value_ok = [](int n) { return n == 0 || (n >= 2 && (n & (n - 1)) == 0); };
  if (!is_dtype(static_cast<int>(c.dtype))) return "dtype must be FP16, BF16 or E4M3";
  // 8-bit floating-point MMA is wgmma's (sm_90a); mma.sync on sm_80 has none.
  if (c.dtype == DType::E4M3 && !is_hopper_config(c))
    return "an E4M3 config is a Hopper config (stages >= 1): 8-bit tensor-core MMA is wgmma's";
  if (c.d_head <= 0 || c.d_head % 64 != 0) return "d_head must be a positive multiple of 64";
  if (c.n_warps <= 0) return "n_warps must be positive";
  if (c.stages < 0) return "stages must be 0 (Ampere) or 1–4 (Hopper)";
  if (c.consumer_regs < 0) return "consumer_regs must be 0 or a register count";
  if (is_hopper_config(c)) return hopper_config_violation(c, pass);
  if (c.consumer_regs != 0) return "consumer_regs needs a Hopper config (stages >= 1)";
  if (c.deterministic)
    return "deterministic needs a Hopper config (stages >= 1; backward steps B5+)";
  if (pass == Pass::forward) {
    if (c.B_r <= 0 || c.B_r % (16 * c.n_warps) != 0)
      return "B_r must be a multiple of 16 * n_warps (each warp owns whole 16-row m-tiles)";
    if (c.B_c <= 0 || c.B_c % 16 != 0) return "B_c must be a positive multiple of 16";
  } else {
    if (c.B_r <= 0 || c.B_r % 16 != 0) return "B_r must be a positive multiple of 16";
    if (c.B_c <= 0 || c.B_c % (16 * c.n_warps) != 0)
      return "B_c must be a multiple of 16 * n_warps (backward: each warp owns whole 16-row "
             "m-tiles of the KV block)";
  }
  if (!load_value_ok(c.Q_mma_load_K_fragments) || !load_value_ok(c.K_mma_load_K_fragments) ||
      !load_value_ok(c.V_mma_load_K_fragments))
    return "each load_K_fragments value must be 0 or a power of two other than 1";
  const int divisor = c.mma_double_buffer_loads ? 16 : 8;
  if (c.Q_mma_load_K_fragments > c.d_head / divisor ||
      c.K_mma_load_K_fragments > c.d_head / divisor)
    return "Q/K load_K_fragments exceeds d_head / 8 (d_head / 16 with buffer)";
  if (c.V_mma_load_K_fragments > c.B_c / divisor)
    return "V load_K_fragments exceeds B_c / 8 (B_c / 16 with buffer)";
  if (c.Q_mma_load_K_fragments != 0 && c.Q_mma_load_K_fragments != c.K_mma_load_K_fragments)
    return "Q load_K_fragments must equal K's unless it is 0";
  return "";
}

constexpr bool is_statically_valid(const KernelConfig& c, Pass pass = Pass::forward) {
  return static_config_violation(c, pass)[0] == '\0';
}

// ---- Short form (spec §2.2) ---------------------------------------------------------------

enum class ShortFormStyle {
  full,            // "(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles"
                   // Hopper: "(FP16, 128, 128, 176, 12): stages_2+regs_240"
  without_d_head,  // "(FP16, 64, 64, 4): async+load_0_0_0_tiles"
  features_only,   // "async+load_0_0_0_tiles"
};

std::string to_short_form(const KernelConfig& c, ShortFormStyle style = ShortFormStyle::full);
std::string features_string(const KernelConfig& c);

// The C++ literal the instantiation generator writes, e.g.
// `flashscope::KernelConfig{flashscope::DType::FP16, 128, 64, 64, 4, true, ...}`.
std::string to_cpp_literal(const KernelConfig& c);

// Thrown for any text that is not a config; the message names the text and the problem.
class ConfigParseError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// What parsing checks beyond the syntax: each field within its own range, whatever the other
// fields: d_head a positive multiple of 64, B_r and B_c positive multiples of 16, n_warps
// positive, each load_Q_K_V_tiles value 0 or a power of two from 2, stages 0-4, consumer_regs 0
// or a multiple of 8 from 24 to 256 ("n_warps 0 is not positive"); nullopt when they are. Every
// config static_config_violation accepts passes these. The rules that relate fields (B_r against
// n_warps, the loads against d_head and B_c, warpgroups, the SMEM budget: the rest of
// static_config_violation) and each step's known-bad combinations (unsupported_combination)
// are not parse errors: such a config parses and is reported as never built, naming the rule.
std::optional<std::string> config_field_problem(const KernelConfig& c);

// `text` with every control byte (a NUL, a line break, ...) written as \xNN, for messages.
std::string escape_control_bytes(std::string_view text);

// Short form with d_head; also accepts markdown table rows (first non-empty `|` cell).
// Every parse function below also applies config_field_problem.
KernelConfig parse_short_form(std::string_view text);
// `FlashForwardKernelConfig{5, 128, 64, 64, 4, 1, 1, 1, 0, 2, 0, 1, 1}` (true/false allowed): the
// seed's 13 fields, or flashscope's 15 (`..., 1, 2, 240}` with stages and consumer_regs) or 16
// (`..., 1, 2, 240, 1}`, with deterministic).
KernelConfig parse_demangled_plain(std::string_view text);
// `FlashForwardKernelConfig{(c10::ScalarType)5, (int)128, ..., (bool)1}`.
KernelConfig parse_demangled_typed(std::string_view text);
// Tries plain demangled, then typed demangled, then the short form.
KernelConfig parse_config(std::string_view text);

// ---- FLOP accounting (spec §1.3) -----------------------------------------------------------

// The two GEMMs only: 4·b·h·N²·d. flashscope's TFLOP/s column uses this count.
double matmul_flops(std::int64_t batch, std::int64_t heads, std::int64_t seq_len,
                    std::int64_t d_head);
// The seed's "Attn TFLOP/s" count: b·h·(4·N²·d + 6·N²).
double seed_attention_flops(std::int64_t batch, std::int64_t heads, std::int64_t seq_len,
                            std::int64_t d_head);

}  // namespace flashscope
