#include <doctest/doctest.h>

#include <string>

#include "configs/config_sets.hpp"
#include "configs/launch_validation.hpp"

using namespace flashscope;

namespace {

// Fake device addresses: validation inspects descriptors only, it never dereferences them.
char q_storage, k_storage, v_storage, o_storage;

const KernelConfig kConfig{DType::FP16, 128, 64, 64, 4, true, true, true, 0, 2, 2, false, true};

KernelEntry entry_for(int step, const KernelConfig& config = kConfig) {
  KernelEntry entry;
  entry.step = step;
  entry.config = config;
  return entry;
}

TensorView tensor(const void* data, std::array<std::int64_t, 4> shape, DType dtype = DType::FP16) {
  return TensorView{data, dtype, MemoryLocation::device, shape, contiguous_strides(shape)};
}

AttentionTensors tensors(std::array<std::int64_t, 4> shape = {2, 1024, 16, 128}) {
  return {tensor(&q_storage, shape), tensor(&k_storage, shape), tensor(&v_storage, shape),
          tensor(&o_storage, shape)};
}

std::string message(const KernelEntry& entry, const AttentionTensors& t, int cc = 90) {
  try {
    validate_launch(entry, t, cc);
  } catch (const LaunchValidationError& error) {
    return error.what();
  }
  return "valid";
}

}  // namespace

TEST_CASE("a valid launch passes and yields the spec's argument record") {
  const AttentionTensors t = tensors();
  CHECK(message(entry_for(7), t) == "valid");
  const ForwardArgs args = make_forward_args(entry_for(7), t);
  CHECK(args.seq_len == 1024);
  CHECK(args.n_heads == 16);
  CHECK(args.batch == 2);
  CHECK(args.batch_stride == 1024 * 16 * 128);
  CHECK(args.seq_stride == 16 * 128);
  CHECK(args.head_stride == 128);
  CHECK(args.n_Q_blocks == 16);
  CHECK(args.n_KV_blocks == 16);
}

TEST_CASE("every validation rule has a message naming the value and the rule") {
  const KernelEntry entry = entry_for(7);
  AttentionTensors t = tensors();
  t.k.data = nullptr;
  CHECK(message(entry, t) == "K is a null pointer");
  t = tensors();
  t.v.location = MemoryLocation::host;
  CHECK(message(entry, t) == "V must be a CUDA (device) tensor");
  t = tensors();
  t.q.strides = {1024 * 16 * 128, 128, 1024 * 128, 1};  // [b, h, N, d] memory
  CHECK(message(entry, t).starts_with("Q must be contiguous [batch, seq_len, heads, d_head]"));
  CHECK(message(entry, tensors(), 75) ==
        "flashscope kernels need SM 8.0 or newer (cp.async, mma.sync m16n8k16); this device is "
        "SM 7.5");
  t = tensors();
  t.q.dtype = t.k.dtype = t.v.dtype = static_cast<DType>(6);
  CHECK(message(entry, t) == "Q has dtype 6, which is not fp16, bf16 or e4m3 (fp8)");
  t = tensors();
  t.v.dtype = DType::BF16;
  CHECK(message(entry, t) == "V has dtype bf16 but Q has fp16; Q, K and V must share one dtype");
  t = tensors();
  t.q.dtype = t.k.dtype = t.v.dtype = t.o.dtype = DType::BF16;
  CHECK(message(entry, t) == "kernel config dtype fp16 does not match the input dtype bf16");
  t = tensors();
  t.k = tensor(&k_storage, {2, 512, 16, 128});
  CHECK(message(entry, t) ==
        "K has shape [2, 512, 16, 128] but Q has [2, 1024, 16, 128]; K and V must be [batch, "
        "seq_len, heads_kv, d_head] with Q's batch, seq_len and d_head and heads_kv a divisor of "
        "Q's heads (equal: multi-head attention)");
  t = tensors();
  t.v = tensor(&k_storage, {2, 1024, 8, 128});
  CHECK(message(entry, t) ==
        "V has shape [2, 1024, 8, 128] but K has [2, 1024, 16, 128]; they must be equal");
  // Grouped K/V heads (8 for 16 query heads) pass the shape rules; a step that runs multi-head
  // attention only refuses the problem by its descriptor, naming the steps that run it.
  t = tensors();
  t.k = tensor(&k_storage, {2, 1024, 8, 128});
  t.v = tensor(&k_storage, {2, 1024, 8, 128});
  CHECK(
      message(entry, t).starts_with("step 7 runs multi-head attention only (heads_kv = heads), "
                                    "not heads_kv 8 for 16 heads; grouped-query attention runs "
                                    "on "));
  t.k = tensor(&k_storage, {2, 1024, 5, 128});
  CHECK(message(entry, t).starts_with("K has shape [2, 1024, 5, 128] but Q has"));
  CHECK(message(entry, tensors({2, 1024, 16, 64})) ==
        "d_head 64 does not match the kernel's d_head = 128");
  CHECK(message(entry, tensors({2, 1000, 16, 128})) ==
        "seq_len 1000 is not a multiple of B_r = 64");
  KernelConfig wide = kConfig;
  wide.B_r = 32;
  wide.n_warps = 2;
  CHECK(message(entry_for(7, wide), tensors({2, 1056, 16, 128})) ==
        "seq_len 1056 is not a multiple of B_c = 64");
  CHECK(message(entry, tensors({0, 1024, 16, 128})) ==
        "Q has an empty dimension: shape [0, 1024, 16, 128]");
  t = tensors();
  t.o.dtype = DType::BF16;
  CHECK(message(entry, t) == "O has dtype bf16 but fp16 inputs write fp16");
  t = tensors();
  t.o = tensor(&o_storage, {2, 1024, 8, 128});
  CHECK(message(entry, t) ==
        "O has shape [2, 1024, 8, 128] but Q has [2, 1024, 16, 128]; they must be equal");
  t = tensors();
  t.o.location = MemoryLocation::host;
  CHECK(message(entry, t) == "O must be a CUDA (device) tensor");
}

TEST_CASE("known-bad combinations of spec §7 are rejected, not run") {
  KernelConfig eight_warps = kConfig;
  eight_warps.B_r = 128;
  eight_warps.B_c = 32;
  eight_warps.n_warps = 8;
  eight_warps.Q_mma_load_K_fragments = 2;
  CHECK(message(entry_for(3, eight_warps), tensors())
            .find("need B_c / 8 >= n_warps; B_c = 32 with 8 warps") != std::string::npos);
  CHECK(unsupported_combination(3, eight_warps).has_value());
  CHECK_FALSE(unsupported_combination(8, eight_warps).has_value());  // CTA-cooperative copies

  KernelConfig three_warps = kConfig;
  three_warps.B_r = 96;
  three_warps.B_c = 48;
  three_warps.n_warps = 3;
  REQUIRE(is_statically_valid(three_warps));
  CHECK(unsupported_combination(12, three_warps).value().find("n_warps = 3 is odd") !=
        std::string::npos);
  CHECK_FALSE(unsupported_combination(7, three_warps).has_value());  // per-warp copies: fine

  KernelEntry step16 = entry_for(16);
  step16.static_head_counts = {16};
  CHECK(message(step16, tensors({1, 1024, 16, 128})) == "valid");
  // The descriptor's static head counts refuse the problem first, naming the steps that run it.
  const std::string refusal = message(step16, tensors({1, 1024, 3, 128}));
  CHECK(
      refusal.starts_with("step 16 is compiled for a static GMEM row stride of d_head x heads "
                          "with heads in {16}; heads 3 runs on steps 1-15, "));
  // The entry's own static head counts (a registration narrower than its descriptor) too.
  KernelEntry narrower = entry_for(15);
  narrower.static_head_counts = {16};
  CHECK(message(narrower, tensors({1, 1024, 3, 128}))
            .starts_with("step 15 is compiled for a static GMEM row stride of d_head x heads with "
                         "heads in {16}; heads = 3"));
}

namespace {

// A [batch, heads] fp32 descale array at a fake device address.
char descale_storage;
DescaleView descale(std::int64_t batch, std::int64_t heads) {
  return DescaleView{reinterpret_cast<const float*>(&descale_storage),
                     MemoryLocation::device,
                     {batch, heads},
                     {heads, 1}};
}

// e4m3 Q, K, V (K and V with `heads_kv` heads), a bf16 O and the three descales.
AttentionTensors e4m3_tensors(std::int64_t heads_kv = 16) {
  AttentionTensors t;
  t.q = tensor(&q_storage, {2, 1024, 16, 128}, DType::E4M3);
  t.k = tensor(&k_storage, {2, 1024, heads_kv, 128}, DType::E4M3);
  t.v = tensor(&v_storage, {2, 1024, heads_kv, 128}, DType::E4M3);
  t.o = tensor(&o_storage, {2, 1024, 16, 128}, DType::BF16);
  t.q_descale = descale(2, 16);
  t.k_descale = t.v_descale = descale(2, heads_kv);
  return t;
}

}  // namespace

TEST_CASE("e4m3 inputs: descales exactly when the inputs are e4m3, of the right shape") {
  CHECK_FALSE(descale_violation(e4m3_tensors()));
  CHECK_FALSE(descale_violation(e4m3_tensors(8)));  // K/V descales follow K/V's heads
  AttentionTensors t = e4m3_tensors();
  t.v_descale.reset();
  CHECK(descale_violation(t).value_or("").starts_with(
      "v_descale is missing: e4m3 inputs need fp32 descales for Q, K and V"));
  t = e4m3_tensors();
  t.q_descale = descale(16, 2);  // [heads, batch]: transposed
  CHECK(descale_violation(t) ==
        "q_descale has shape [16, 2] but must be [2, 16] ([batch, heads], one descale per sample "
        "and head)");
  t = e4m3_tensors(8);
  t.k_descale = descale(2, 16);  // Q's heads, not K's
  CHECK(descale_violation(t) ==
        "k_descale has shape [2, 16] but must be [2, 8] ([batch, heads_kv], one descale per "
        "sample and head)");
  t = e4m3_tensors();
  t.k_descale->strides = {1, 2};  // a transposed view of a [16, 2] array
  CHECK(descale_violation(t) == "k_descale must be contiguous [2, 16]; it has strides [1, 2]");
  t = e4m3_tensors();
  t.q_descale->location = MemoryLocation::host;
  CHECK(descale_violation(t) == "q_descale must be a CUDA (device) array, like the inputs");
  // 16-bit inputs take none.
  AttentionTensors sixteen = tensors();
  CHECK_FALSE(descale_violation(sixteen));
  sixteen.k_descale = descale(2, 16);
  CHECK(descale_violation(sixteen).value_or("").starts_with(
      "k_descale is given but the inputs are fp16; descales belong to e4m3 inputs only"));
  CHECK(message(entry_for(7), sixteen).starts_with("k_descale is given but the inputs are fp16"));
}

TEST_CASE("e4m3 block descales: steps with .block_descales only, K and V in whole KV tiles") {
  // The first FP8 step per (sample, head) and the first step with block descales (step 31 and
  // any copied from it).
  std::vector<int> block_steps;
  for (const StepDescriptor& step : configs::forward_step_descriptors())
    if (step.block_descales) block_steps.push_back(step.number);
  REQUIRE_FALSE(block_steps.empty());
  CHECK(block_steps.front() == 31);
  const KernelConfig config = parse_short_form("(E4M3, 128, 128, 128, 12): stages_2+regs_240");
  // [2, 16] Q heads and K/V heads of 1024 positions in blocks of `rows`: [2, 16, 1024 / rows].
  const auto blocked = [](int rows) {
    DescaleView view = descale(2, 16);
    const std::int64_t blocks = (1024 + rows - 1) / rows;
    view.strides = {16 * blocks, blocks};
    view.block_rows = rows;
    return view;
  };
  AttentionTensors t = e4m3_tensors();
  t.q_descale = blocked(128);
  t.k_descale = t.v_descale = blocked(128);
  CHECK(message(entry_for(31, config), t) == "valid");
  const ForwardArgs args = make_forward_args(entry_for(31, config), t);
  CHECK(args.q_descale_rows == 128);
  CHECK(args.kv_descale_rows == 128);
  // Per (sample, head): one block of seq_len positions, what steps 28 and 29 read.
  const ForwardArgs per_head = make_forward_args(entry_for(29, config), e4m3_tensors());
  CHECK(per_head.q_descale_rows == 1024);
  CHECK(per_head.kv_descale_rows == 1024);
  CHECK(message(entry_for(29, config), e4m3_tensors()) == "valid");
  CHECK(message(entry_for(29, config), t) ==
        "step 29 reads one descale per sample and head, not per block of positions (block_rows "
        "128); block descales run on " +
            configs::step_list_text(block_steps));
  // Q's blocks may be any size (a row looks its own up); K's and V's are whole KV tiles.
  t.q_descale = blocked(192);
  CHECK(message(entry_for(31, config), t) == "valid");
  t.k_descale = t.v_descale = blocked(64);
  CHECK(message(entry_for(31, config), t) ==
        "k_descale and v_descale have block_rows 64, not a multiple of the kernel's B_c = 128 "
        "(step 31 applies one K and one V descale per KV tile)");
  t.k_descale = blocked(128);
  t.v_descale = blocked(256);
  CHECK(descale_violation(t) ==
        "k_descale has block_rows 128 but v_descale 256; K and V share their blocks (one "
        "descale of each per KV tile)");
  t.v_descale = blocked(128);
  t.v_descale->strides = {16, 1};  // per-head strides for an array of 8 blocks a head
  CHECK(descale_violation(t) ==
        "v_descale must be contiguous [2, 16] x 8 blocks; it has strides [16, 1]");
  t.v_descale = blocked(128);
  t.q_descale->block_rows = 2048;
  CHECK(descale_violation(t) ==
        "q_descale has block_rows 2048; a block is 1 to seq_len = 1024 sequence positions (0: one "
        "descale per sample and head)");
}

TEST_CASE("e4m3 inputs: O is bf16, and every 16-bit step refuses e4m3 by name") {
  AttentionTensors t = e4m3_tensors();
  t.o.dtype = DType::E4M3;
  CHECK(message(entry_for(7), t) == "O has dtype e4m3 but e4m3 inputs write bf16");
  // Well-formed e4m3 tensors reach the step's descriptor: steps 1-27 run fp16 and bf16 only, and
  // name the FP8 steps (those whose descriptors list e4m3: step 28 and any copied from it).
  std::vector<int> fp8_steps;
  for (const StepDescriptor& step : configs::forward_step_descriptors())
    if (step.dtypes.contains(DType::E4M3)) fp8_steps.push_back(step.number);
  REQUIRE_FALSE(fp8_steps.empty());
  CHECK(fp8_steps.front() == 28);
  CHECK(message(entry_for(7), e4m3_tensors()) ==
        "step 7 runs fp16 and bf16 inputs only, not e4m3; e4m3 (FP8) input runs on " +
            configs::step_list_text(fp8_steps) + " (their kernels/versions/*/step.hpp declare it)");
  for (const StepDescriptor& step : configs::forward_step_descriptors()) {
    if (step.dtypes.contains(DType::E4M3)) continue;
    Problem problem = multi_head_problem(DType::E4M3, 1, 1024, 16, *step.d_heads.begin());
    problem.pass = step.pass;
    INFO("step " << step.number);
    CHECK(configs::step_refusal_message(step.number, problem)
              .value_or("")
              .starts_with("step " + step_name(step.number) +
                           " runs fp16 and bf16 inputs only, not e4m3"));
  }
  // A config in e4m3 is refused for the step's dtype first, Ampere (where an E4M3 config is no
  // config at all) and Hopper alike.
  KernelConfig ampere = kConfig;
  ampere.dtype = DType::E4M3;
  CHECK(unsupported_combination(7, ampere).value_or("").starts_with(
      "step 7 runs fp16 and bf16 inputs only, not e4m3"));
  const KernelConfig hopper = parse_short_form("(E4M3, 128, 128, 128, 12): stages_2+regs_240");
  CHECK(unsupported_combination(25, hopper)
            .value_or("")
            .starts_with("step 25 runs fp16 and bf16 inputs only, not e4m3"));
  CHECK(std::string(static_config_violation(hopper)).empty());
  CHECK(std::string(static_config_violation(ampere)) ==
        "an E4M3 config is a Hopper config (stages >= 1): 8-bit tensor-core MMA is wgmma's");
}

// ---- The backward (docs/spec/backward-track.md §1.1) -------------------------------------------

namespace {

char do_storage, dq_storage, dk_storage, dv_storage;
float lse_storage;

cudaError_t launch_nothing(const BackwardArgs&, cudaStream_t) {
  return cudaSuccess;
}
std::size_t no_workspace(const BackwardArgs&) {
  return 0;
}

// Step B1's d_head 128 pick, as a backward entry (a launcher and a workspace size, no forward).
KernelEntry backward_entry() {
  KernelEntry entry =
      entry_for(kFirstBackwardStep, *configs::step_picks(kFirstBackwardStep).progression);
  entry.launch_backward = &launch_nothing;
  entry.backward_workspace_bytes = &no_workspace;
  return entry;
}

BackwardTensors backward_tensors(std::array<std::int64_t, 4> shape = {2, 1000, 3, 128}) {
  BackwardTensors t{tensor(&q_storage, shape),  tensor(&k_storage, shape),
                    tensor(&v_storage, shape),  tensor(&o_storage, shape),
                    tensor(&do_storage, shape), tensor(&dq_storage, shape),
                    tensor(&dk_storage, shape), tensor(&dv_storage, shape)};
  t.softmax_lse = &lse_storage;
  return t;
}

std::string backward_message(const KernelEntry& entry, const BackwardTensors& t, int cc = 90) {
  try {
    validate_backward_launch(entry, t, cc);
  } catch (const LaunchValidationError& error) {
    return error.what();
  }
  return "valid";
}

}  // namespace

TEST_CASE("a backward launch: partial blocks, its argument record and every refusal") {
  // 1000 rows are no multiple of B1's blocks: its descriptor has `.partial_blocks`.
  BackwardTensors t = backward_tensors();
  const KernelEntry entry = backward_entry();
  CHECK(backward_message(entry, t) == "valid");
  CHECK(problem_of(t).pass == Pass::backward);
  const BackwardArgs args = make_backward_args(entry, t, &dv_storage);
  CHECK(args.seq_len == 1000);
  CHECK(args.n_heads == 3);
  CHECK(args.n_kv_heads == 3);
  CHECK(args.batch_stride == 1000 * 3 * 128);
  CHECK(args.kv_seq_stride == 3 * 128);
  CHECK(args.softmax_lse == &lse_storage);
  CHECK(args.workspace == &dv_storage);
  CHECK(args.dK == &dk_storage);
  CHECK(args.causal == 0);
  // A forward step keeps the multiple rule.
  CHECK(message(entry_for(7), tensors({2, 1000, 16, 128})) ==
        "seq_len 1000 is not a multiple of B_r = 64");

  // A forward step's entry is refused by its pass, naming the steps of the backward.
  const std::string forward_step = backward_message(entry_for(7), t);
  CHECK(forward_step.find("step 7 is a forward step, not a backward one; the backward pass runs "
                          "on steps B1") != std::string::npos);
  // Each gradient like its input, dO and O like Q, the log-sum-exp present.
  BackwardTensors bad = t;
  bad.dk.shape = {2, 1000, 1, 128};
  bad.dk.strides = contiguous_strides(bad.dk.shape);
  CHECK(backward_message(entry, bad).find("dK has shape [2, 1000, 1, 128] but K has") == 0);
  bad = t;
  bad.d_o.dtype = DType::BF16;
  CHECK(backward_message(entry, bad) == "dO has dtype bf16 but Q has fp16");
  bad = t;
  bad.o.data = nullptr;
  CHECK(backward_message(entry, bad) == "O is a null pointer");
  bad = t;
  bad.softmax_lse = nullptr;
  CHECK(backward_message(entry, bad).find("the log-sum-exp is a null pointer") == 0);
  // The step's axes: grouped heads on B1, named with the steps of the backward pass.
  bad = t;
  bad.q.shape = bad.o.shape = bad.d_o.shape = bad.dq.shape = {2, 1000, 6, 128};
  for (TensorView* view : {&bad.q, &bad.o, &bad.d_o, &bad.dq})
    view->strides = contiguous_strides(view->shape);
  CHECK(backward_message(entry, bad).find("step B1 runs multi-head attention only") == 0);
  CHECK(backward_message(entry, bad).find("runs on no backward step yet") != std::string::npos);
  // The device: B1 runs on sm_80 and newer.
  CHECK(backward_message(entry, t, 75).find("need SM 8.0 or newer") != std::string::npos);
}

TEST_CASE("the deterministic option: only on a step that declares it, named in the refusal") {
  // B5 (step 105) declares it (StepDescriptor::deterministic_dq); B4 runs the same CTA without it,
  // so a deterministic config there would silently not be one.
  const KernelConfig deterministic =
      parse_short_form("(FP16, 128, 64, 128, 12): stages_3+regs_240+deterministic");
  CHECK_FALSE(unsupported_combination(105, deterministic).has_value());
  const auto refusal = unsupported_combination(104, deterministic);
  REQUIRE(refusal.has_value());
  CHECK(refusal->find("step B4 has no deterministic option") != std::string::npos);
  // The steps that have it, B5 first (B6 and later keep it): "... which steps B5, B6 have".
  CHECK(refusal->find("which step") != std::string::npos);
  CHECK(refusal->find(" B5") != std::string::npos);
  // The variant is one of B5's picks, so the prog set builds it.
  const configs::StepPicks picks = configs::step_picks(105);
  REQUIRE_FALSE(picks.variants.empty());
  CHECK(picks.variants.front() == deterministic);
  CHECK(picks.progression.has_value());
  CHECK_FALSE(picks.progression->deterministic);
}
