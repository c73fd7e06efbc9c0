// What the host knows about the step in this folder: its descriptor
// (kernels/common/step_descriptor.hpp), listed in kernels/versions/steps.hpp. The kernel code
// next to it is frozen; docs/adding-a-step.md says what each field drives.
#pragma once

#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/step_rules.hpp"

namespace flashscope::versions {

// The step's own functions live in a namespace named after its folder, so that a copy of this
// folder (renamed as docs/adding-a-step.md says) declares its own and never collides with these.
namespace v35 {

// A packed tile holds floor(B_r / g) positions of a group's g query heads: a group of more than
// B_r heads would leave none (docs/versions/26.md). Step 29: and the lengths it runs.
inline std::optional<std::string> packs_whole_groups(int step, const KernelConfig& c,
                                                     const Problem& problem) {
  if (problem.group_size() > c.B_r)
    return "step " + std::to_string(step) +
           " packs a group's query heads into one tile of B_r = " + std::to_string(c.B_r) +
           " rows; a group of " + std::to_string(problem.group_size()) + " heads (heads " +
           std::to_string(problem.heads) + " / heads_kv " + std::to_string(problem.heads_kv) +
           ") does not fit";
  // Step 29: the descriptor's .partial_blocks lifts launch validation's multiples of B_r and B_c,
  // since a last query block past seq_len is what step 26's packed blocks already are (zero-filled
  // by TMA, never stored): B_r = 192 divides none of the sweep's powers of two. The KV blocks stay
  // whole: no key is masked against seq_len.
  if (problem.seq_len % c.B_c != 0)
    return "seq_len " + std::to_string(problem.seq_len) +
           " is not a multiple of B_c = " + std::to_string(c.B_c) + " (step " +
           std::to_string(step) + " reads whole KV blocks)";
  return std::nullopt;
}

// The FP8 path's shared memory (docs/versions/28.md): every 8-bit tile row is one 128-byte swizzle
// row, so a tile is ceil(d_head / 128) sub-tiles of 128 columns (d_head = 64 fills half of each
// row; the TMA box's other half is zeros). Beside Q and the K and V tiles of each stage, each
// stage holds V transposed (d_head rows of B_c <= 128 keys, one 128-byte row each): 8-bit wgmma
// reads B K-major only.
inline constexpr int kFp8RowBytes = 128;
constexpr int fp8_sub_tiles(const KernelConfig& c) {
  return (c.d_head + kFp8RowBytes - 1) / kFp8RowBytes;
}
constexpr int fp8_smem_bytes(const KernelConfig& c) {
  const int row_bytes = fp8_sub_tiles(c) * kFp8RowBytes;
  return kHopperSmemAlignment + c.B_r * row_bytes +
         c.stages * (2 * c.B_c * row_bytes + c.d_head * kFp8RowBytes) + kHopperBarrierBytes;
}

// Step 29: step 25's warp-specialized rules with two or three consumer warpgroups (B_r = 128 or
// 192: the GEMM turns go round them, kernel.cuh). A third consumer needs 16 warps, and under
// __launch_bounds__(512, 1) a thread starts with 128 registers: the consumers may take 160, the
// most the producer can pay for (static_config_violation). Both paths, the 16-bit kernel and the
// FP8 path (fp8_kernel.cuh), take their turns so.
inline std::optional<std::string> two_or_three_consumers(int step, const KernelConfig& c) {
  const std::string name = "step " + std::to_string(step);
  const int consumers = consumer_warpgroups(c);
  if (consumers != 2 && consumers != 3)
    return name + " runs one producer and two or three consumer warpgroups: B_r must be 128 or " +
           "192, not " + std::to_string(c.B_r);
  if (producer_warpgroups(c) != 1)
    return name + " needs the producer warpgroup: n_warps must be " +
           std::to_string(4 * (consumers + 1)) + ", not " + std::to_string(c.n_warps);
  if (c.consumer_regs == 0)
    return name + " reallocates registers with setmaxnreg: consumer_regs (regs_N) must be set";
  if (c.stages < 2)
    return name + " overlaps loads with compute through a circular buffer: stages must be >= 2";
  return std::nullopt;
}

// Step 29's rules (two_or_three_consumers), and for e4m3 the transposed V: B_c keys must fill
// whole 32-key wgmma steps inside one 128-byte row, and Q + stages x (K + V + Vᵀ) must fit.
inline std::optional<std::string> fp8_rules(int step, const KernelConfig& c) {
  if (auto reason = two_or_three_consumers(step, c)) return reason;
  if (c.dtype != DType::E4M3) return std::nullopt;
  const std::string name = "step " + std::to_string(step);
  if (c.B_c % 32 != 0 || c.B_c > 128)
    return name +
           " keeps e4m3 V transposed in rows of 128 bytes, read in 32-key wgmma steps: "
           "B_c must be 32, 64, 96 or 128, not " +
           std::to_string(c.B_c);
  if (fp8_smem_bytes(c) > kHopperMaxSmemBytes)
    return name + " keeps e4m3 Q and stages x (K + V + transposed V) in shared memory: " +
           std::to_string(fp8_smem_bytes(c)) + " bytes at d_head = " + std::to_string(c.d_head) +
           ", B_c = " + std::to_string(c.B_c) + " and stages = " + std::to_string(c.stages) +
           " exceed the 232448 bytes (227 KB) a block may opt in to";
  return std::nullopt;
}

// Step 32: the query-block height chosen per problem. At d_head 64 step 29's three consumers
// (B_r = 192) pay without the mask at every N, but under it, at short N, a (sample, head) has only
// 3-11 query blocks, each crossing the diagonal in two KV blocks: there step 28's two consumers of
// 128 rows (twice as many, finer paired units) were faster in step 29's run on an
// H200 (N = 512, 1024, 2048: 214.0, 297.6, 361.0 TFLOP/s fp16 against step 30's 168.6, 285.5,
// 335.7 in its own run), and from N = 4096 on the 192-row tiles lead (docs/versions/32.md has
// this step's own measurement). So the step launches its B_r = 128 kernel (the variant below, step
// 28's config at d_head 64) for causal fp16 and bf16 problems of seq_len <= 2048 whose group of
// query heads fits 128 rows, and the 192-row kernel otherwise. e4m3 keeps B_r = 192 (not
// measured at 128 under this step's schedule). Applied by configs::config_for_problem.
inline constexpr int kShortCausalMaxSeqLen = 2048;
inline std::optional<KernelConfig> rows_for_problem(const KernelConfig& c, const Problem& problem) {
  if (c.d_head != 64 || c.B_r != 192 || !problem.causal) return std::nullopt;
  if (c.dtype != DType::FP16 && c.dtype != DType::BF16) return std::nullopt;
  if (problem.seq_len > kShortCausalMaxSeqLen) return std::nullopt;
  KernelConfig two_consumers = c;
  two_consumers.B_r = 128;
  two_consumers.n_warps = 12;
  two_consumers.consumer_regs = 240;
  // A packed tile of 128 rows holds a group of at most 128 query heads (packs_whole_groups).
  if (problem.group_size() > two_consumers.B_r) return std::nullopt;
  return two_consumers;
}

}  // namespace v35

inline constexpr StepDescriptor kStep35{
    .number = 35,
    .title = "FP8: the softmax's row maximum as a tree, not a chain",
    .track = Track::hopper,
    .source_folder = "v35",
    .cpp_namespace = "v35",
    // e4m3 inputs on the FP8 path (docs/spec/fp8-track.md §4.1, O in bf16); fp16 and bf16 on
    // step 27's 16-bit path, unchanged.
    .dtypes = {DType::FP16, DType::BF16, DType::E4M3},
    // Generic in d_head as steps 22-25 are (docs/versions/25.md, 26.md).
    .d_heads = {64, 128, 256},
    // Step 23's mask, against each packed row's own query position, and step 24's paired
    // schedule over the packed blocks.
    .causal = true,
    // Any n_kv_heads that divides n_heads, with groups of at most B_r query heads: the group's
    // heads are packed into one tile, which loads each K/V tile once (docs/versions/26.md).
    .grouped_kv = true,
    // The epilogue writes the row log-sum-exp when ForwardArgs::softmax_lse is set.
    .writes_lse = true,
    // Step 30: under the mask the partial block is the first one instead, its rows before
    // position 0 (Packing::first_position, docs/versions/30.md).
    // Step 29: a last query block past seq_len (B_r = 192 divides no power of two), as step 26's
    // packed blocks already run; whole KV blocks (packs_whole_groups says which lengths run).
    .partial_blocks = true,
    // Step 31: e4m3 descales per block of positions (ForwardArgs::q_descale_rows,
    // kv_descale_rows; K and V blocks of whole KV tiles), or per (sample, head) as before.
    .block_descales = true,
    .static_head_counts = {},
    // Step 25's progression configs: packing changes neither the tiles nor their shared memory.
    // No per-GPU picks yet: they wait for a measured sweep of this step's tune set.
    // Step 29: at d_head = 64 three consumers of 64 rows (B_r = 192, n_warps 16) at the 160
    // registers the producer can pay for, with step 28's B_c = 128 and four stages
    // (docs/versions/29.md); d_head 128 and 256 keep step 28's configs.
    .picks = {.progression = "(FP16, 128, 128, 128, 12): stages_2+regs_240",
              .progression_at_other_d_heads = {"(FP16, 64, 192, 128, 16): stages_4+regs_160",
                                               "(FP16, 256, 128, 64, 12): stages_2+regs_240"},
              // Step 32: the kernel rows_for_problem launches under the mask at short N (step 28's
              // config at d_head 64), built in each dtype; a prog sweep measures it at every N too,
              // beside the choice (docs/versions/32.md).
              .variants = {"(FP16, 64, 128, 128, 12): stages_4+regs_240"}},
    // Step 25's tune set: the packed Q tile is the B_r x d_head tile it always was.
    // Step 29: B_r = 192 beside 128, at 160 registers (rule H1 leaves 160 to B_r = 192 and 224,
    // 240 to B_r = 128; rule H2 keeps B_r = 192 where the accumulators fit 160).
    .tuning = {.by_default = true,
               .B_r = {128, 192},
               .B_c = {64, 128},
               // Without the O tile B_c = 128 has room for 3 stages at d_head = 128, B_c = 64 for
               // 6 (4 is where step 22's tune set showed no further gain).
               .stages = {2, 3, 4},
               .consumer_regs = {160, 224, 240},
               .producer_warpgroups = 1,
               // At d_head = 256 a B_c = 64 stage is 64 KB: two fit beside the 64 KB Q tile, and
               // B_c = 32 stays for comparison with step 24. B_c = 128 (128 KB a stage) does not
               // fit twice.
               .by_d_head = {{{.d_head = 256, .B_c = {32, 64}, .stages = {2, 3}}}}},
    // Step 25's rules: smem_bytes() (Q + stages x (K + V)) is the whole footprint, and packing
    // adds none (the idle rows of a packed Q tile are part of it).
    // Step 25's rules, plus the FP8 path's transposed V tiles (fp8_rules).
    // Step 29: two or three consumers (two_or_three_consumers).
    .rules = v35::fp8_rules,
    .problem_rules = v35::packs_whole_groups,
    // Step 32: the query-block height per problem (rows_for_problem).
    .problem_config = v35::rows_for_problem,
    .kernel = {.header = "kernel.cuh", .register_function = "register_kernel"},
};

}  // namespace flashscope::versions
