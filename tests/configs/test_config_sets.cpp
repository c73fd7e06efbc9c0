#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "configs/config_sets.hpp"
#include "configs/launch_validation.hpp"
#include "kernels/versions/steps.hpp"

using namespace flashscope;
using namespace flashscope::configs;

namespace {

std::string select_error(std::string_view key) {
  try {
    select(key);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("progression sets") {
  const auto base = progression();
  REQUIRE(base.size() == 7);
  CHECK(to_short_form(base[6]) ==
        "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_2_2_tiles+opt_softmax");
  const auto extended = extended_progression();
  CHECK(extended.size() == 56);
  CHECK(std::set<KernelConfig>(extended.begin(), extended.end()).size() == 56);
  std::set<std::tuple<int, int, int>> shapes;
  for (const auto& c : extended)
    shapes.insert({c.B_r, c.B_c, c.n_warps});
  CHECK(shapes == std::set<std::tuple<int, int, int>>{{128, 128, 4},
                                                      {128, 128, 8},
                                                      {128, 64, 4},
                                                      {128, 64, 8},
                                                      {128, 32, 4},
                                                      {128, 32, 8},
                                                      {64, 64, 4},
                                                      {64, 32, 4}});
}

TEST_CASE("auto-tune space: 256 candidates, 80 survive, 40 per dtype, per-shape counts") {
  CHECK(tune_candidates().size() == 256);
  const auto tune = tune_set();
  CHECK(tune.size() == 80);
  CHECK(tune.front().dtype == DType::BF16);  // product order: BF16 block first
  std::map<DType, int> per_dtype;
  std::map<std::pair<int, int>, int> per_shape;
  for (const auto& c : tune) {
    ++per_dtype[c.dtype];
    if (c.dtype == DType::FP16) ++per_shape[{c.B_r, c.B_c}];
  }
  CHECK(per_dtype[DType::FP16] == 40);
  CHECK(per_dtype[DType::BF16] == 40);
  CHECK(per_shape[{64, 32}] == 8);
  CHECK(per_shape[{64, 64}] == 16);
  CHECK(per_shape[{128, 32}] == 8);
  CHECK(per_shape[{128, 64}] == 8);
  // Kernel 3's and kernel 7's progression configs are members (spec §5.3).
  const std::set<KernelConfig> members(tune.begin(), tune.end());
  const auto base = progression();
  CHECK(members.contains(base[2]));
  CHECK(members.contains(base[6]));
  int progression_members = 0;
  for (const auto& c : base)
    progression_members += members.contains(c);
  CHECK(progression_members == 2);
  // 7 ∪ 80 = 85 (spec §5.5).
  std::set<KernelConfig> with_progression = members;
  with_progression.insert(base.begin(), base.end());
  CHECK(with_progression.size() == 85);
}

TEST_CASE("each filter rule rejects what it names") {
  KernelConfig c{DType::FP16, 128, 64, 32, 4, false, true, true, 2, 2, 0, false, false};
  CHECK(tune_rejection(c)->starts_with("rule 1"));
  c = {DType::FP16, 128, 128, 64, 4, true, true, true, 2, 0, 0, false, false};
  CHECK(tune_rejection(c)->starts_with("rule 2"));
  c = {DType::FP16, 128, 64, 64, 8, true, true, true, 0, 0, 0, false, false};
  CHECK(tune_rejection(c)->starts_with("rule 3"));
  c = {DType::FP16, 128, 64, 32, 4, true, true, true, 0, 2, 2, false, false};
  CHECK(tune_rejection(c)->starts_with("rule 4"));
  c = {DType::FP16, 128, 64, 64, 4, true, true, true, 2, 2, 2, false, false};
  CHECK(tune_rejection(c)->starts_with("rule 5"));
  c = {DType::FP16, 128, 128, 64, 4, true, true, true, 0, 2, 2, false, false};
  CHECK(tune_rejection(c)->starts_with("rule 6"));
  c = {DType::FP16, 128, 128, 64, 4, true, true, true, 2, 2, 0, false, false};
  CHECK_FALSE(tune_rejection(c).has_value());
  // Rejection counts over the 128 FP16 candidates (first matching rule): Q = 2 with K = 0
  // (rule 2) is 2 of the 8 load triples; of the 6 left, 4 have a resident Q.
  std::map<std::string, int> by_rule;
  for (const auto& candidate : tune_candidates())
    if (candidate.dtype == DType::FP16)
      if (auto rule = tune_rejection(candidate)) ++by_rule[rule->substr(0, 6)];
  CHECK(by_rule["rule 1"] == 0);
  CHECK(by_rule["rule 2"] == 32);
  CHECK(by_rule["rule 3"] == 0);
  CHECK(by_rule["rule 4"] == 16);
  CHECK(by_rule["rule 5"] == 8);
  CHECK(by_rule["rule 6"] == 32);
}

TEST_CASE("selection keys of spec §5.4") {
  CHECK(select("prog").size() == 7);
  CHECK(select("progression").size() == 7);
  CHECK(select("prog_all").size() == 56);
  CHECK(select("all").size() == 80);
  CHECK(select("tune").size() == 80);
  CHECK(select("64,32").size() == 16);
  CHECK(select("64,64").size() == 32);
  CHECK(select("128,32").size() == 16);
  CHECK(select("128,64").size() == 16);
  CHECK(select("128,128").empty());
  CHECK(select_error("").find("invalid kernels key") != std::string::npos);
  CHECK(select_error("fast").find("invalid kernels key \"fast\"") != std::string::npos);
  CHECK(select_error("128,x").find("two integers") != std::string::npos);
}

TEST_CASE("the run-time step list is kernels/versions/steps.hpp's") {
  // The host code outside config_sets.cpp reads the list through these (docs/architecture.md).
  CHECK(kLastStep == versions::kLast);
  CHECK(kLastBackwardStep == versions::kLastBackward);
  REQUIRE(step_descriptors().size() == versions::kEvery.size());
  REQUIRE(forward_step_descriptors().size() == versions::kAll.size());
  REQUIRE(backward_step_descriptors().size() == versions::kBackward.size());
  for (std::size_t i = 0; i < versions::kEvery.size(); ++i)
    CHECK(step_descriptors()[i].number == versions::kEvery[i].number);
  CHECK(forward_step_descriptors().back().number == kLastStep);
  CHECK(backward_step_descriptors().front().number == kFirstBackwardStep);
  CHECK(backward_step_descriptors().back().number == kLastBackwardStep);
  for (const StepDescriptor& step : versions::kEvery)
    CHECK(find_step_descriptor(step.number) == versions::find(step.number));
  for (const int missing : {0, -1, kLastStep + 1, kFirstBackwardStep - 1, kLastBackwardStep + 1})
    CHECK(find_step_descriptor(missing) == nullptr);
}

TEST_CASE("steps and picks") {
  CHECK(steps().size() == versions::kEvery.size());  // one per descriptor
  for (int step = kFirstStep; step <= kLastStep; ++step) {
    CHECK(step_info(step).step == step);
    const StepPicks picks = step_picks(step);
    if (step <= 7) {
      CHECK(picks.progression.has_value());
      CHECK_FALSE(picks.seed_a100.has_value());
    } else if (step <= 16) {
      REQUIRE(picks.seed_a100.has_value());
      CHECK(picks.seed_a100->B_r == 128);
      CHECK(picks.seed_a100->B_c == 64);
      CHECK(picks.seed_rtx3090->B_c == 32);
    } else {
      REQUIRE(picks.progression.has_value());
      CHECK(is_hopper_config(*picks.progression));
      CHECK_FALSE(picks.seed_a100.has_value());
      // Every Hopper pick is a config its step runs.
      for (const KernelConfig& pick : picks.all())
        CHECK_MESSAGE(!unsupported_combination(step, pick), to_short_form(pick));
    }
  }
  CHECK(step_info(16).static_head_counts == std::vector<int>{16});
  CHECK(step_info(17).static_head_counts == std::vector<int>{16});  // step 16's static stride
  CHECK(step_info(18).static_head_counts.empty());                  // TMA: the map has strides
  CHECK(step_info(21).source_folder == "v21");
  CHECK(step_info(22).source_folder == "v22");
  // Head dimensions: step 22 has a progression config at each of its own; the others name the
  // steps that support the one asked for.
  // The steps that run a value are those whose descriptors declare it, in order: a new step
  // changes these lists through its descriptor alone.
  const auto declaring_d_head = [](int d_head) {
    std::vector<int> out;
    for (const StepDescriptor& step : versions::kEvery)
      if (step.d_heads.contains(d_head)) out.push_back(step.number);
    return out;
  };
  // The forward steps of a list (the backward track, from 101, declares its own axes).
  const auto forward_only = [](std::vector<int> steps) {
    std::erase_if(steps, [](int step) { return is_backward_step_number(step); });
    return steps;
  };
  CHECK(steps_running(Axis::d_head, problem_at_d_head(128)).size() == versions::kAll.size());
  CHECK(steps_running(Axis::d_head, problem_at_d_head(128, Pass::backward)).size() ==
        versions::kBackward.size());
  for (const int d_head : {64, 256}) {
    // The steps of the problem's pass.
    const std::vector<int> declared = forward_only(declaring_d_head(d_head));
    CHECK(steps_running(Axis::d_head, problem_at_d_head(d_head)) == declared);
    // Step 22 brought them, and every step after it keeps them.
    REQUIRE_FALSE(declared.empty());
    CHECK(declared.front() == 22);
    CHECK(declared.back() == kLastStep);
    CHECK(declared.size() == static_cast<std::size_t>(kLastStep - 22 + 1));
  }
  CHECK(steps_running(Axis::d_head, problem_at_d_head(96)).empty());
  // The causal mask: step 23 adds it, and every step after it keeps it (`.causal`).
  Problem causal_problem = problem_at_d_head(128);
  causal_problem.causal = true;
  const std::vector<int> causal_steps = steps_running(Axis::causal, causal_problem);
  REQUIRE_FALSE(causal_steps.empty());
  CHECK(causal_steps.front() == 23);
  CHECK(causal_steps.back() == kLastStep);
  CHECK(causal_steps.size() == static_cast<std::size_t>(kLastStep - 23 + 1));
  // Grouped K/V heads: the steps whose descriptor has `.grouped_kv`, from step 26 on.
  Problem grouped = problem_at_d_head(128);
  grouped.heads_kv = 4;
  for (const int step : steps_running(Axis::heads_kv, grouped))
    CHECK(configs::step_descriptor(step).grouped_kv);
  // A refusal names the steps of the problem's pass.
  const std::string d64_steps = step_list_text(forward_only(declaring_d_head(64)));
  const std::string d256_steps = step_list_text(forward_only(declaring_d_head(256)));
  for (const int d_head : {64, 128, 256}) {
    const KernelConfig headline = headline_config(22, d_head);
    CHECK(headline.d_head == d_head);
    CHECK_FALSE(unsupported_combination(22, headline).has_value());
  }
  CHECK(headline_config(22, 128) == headline_config(22));
  CHECK(headline_config(22, 256).B_c == 32);
  CHECK_THROWS_WITH_AS(
      headline_config(7, 64),
      doctest::Contains(("step 7 runs d_head 128 only; d_head 64 runs on " + d64_steps).c_str()),
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(headline_config(22, 96), doctest::Contains("d_head 96 runs on no step"),
                       std::invalid_argument);
  // Launch validation refuses another d_head on a step that does not declare it, naming the
  // steps that do.
  KernelConfig seven_at_64 = *step_picks(7).progression;
  seven_at_64.d_head = 64;
  const auto seven_rejection = unsupported_combination(7, seven_at_64);
  REQUIRE(seven_rejection.has_value());
  CHECK(seven_rejection->find("step 7 runs d_head 128 only; d_head 64 runs on " + d64_steps) !=
        std::string::npos);
  KernelConfig twenty_one_at_256 = *step_picks(21).progression;
  twenty_one_at_256.d_head = 256;
  twenty_one_at_256.B_c = 32;  // within the shared memory every Hopper config must fit
  REQUIRE(unsupported_combination(21, twenty_one_at_256).has_value());
  CHECK(unsupported_combination(21, twenty_one_at_256)->find("d_head 256 runs on " + d256_steps) !=
        std::string::npos);
  KernelConfig twenty_two_at_192 = headline_config(22);
  twenty_two_at_192.d_head = 192;
  twenty_two_at_192.B_c = 32;
  REQUIRE(unsupported_combination(22, twenty_two_at_192).has_value());
  CHECK(unsupported_combination(22, twenty_two_at_192)
            ->find("step 22 runs d_head 64, 128, 256; d_head 192 runs on no step") !=
        std::string::npos);
  const std::string past_last = "step " + std::to_string(kLastStep + 1) + " does not exist";
  CHECK_THROWS_WITH_AS(step_info(kLastStep + 1), doctest::Contains(past_last.c_str()),
                       std::out_of_range);
  CHECK_THROWS_WITH_AS(step_descriptor(0), doctest::Contains("step 0 does not exist"),
                       std::out_of_range);
}

TEST_CASE("Hopper tune spaces and their filter rules") {
  // Step 17: B_r {64, 128} x B_c {64, 128} x stages {1}, both dtypes.
  CHECK(hopper_tune_candidates(17).size() == 2 * 2 * 2);
  CHECK(hopper_tune_set(17).size() == 8);
  // Step 18: B_r {64, 128} x B_c {64, 128} x stages {2, 3, 4}: 128 x 128 x 4 is over 227 KB.
  CHECK(hopper_tune_candidates(18).size() == 2 * 2 * 2 * 3);
  const auto rejection_18 = hopper_tune_rejection(18, [] {
    KernelConfig c{};
    c.dtype = DType::FP16;
    c.d_head = 128;
    c.B_r = 128;
    c.B_c = 128;
    c.n_warps = 8;
    c.stages = 4;
    return c;
  }());
  REQUIRE(rejection_18.has_value());
  CHECK(rejection_18->find("rule H1") != std::string::npos);
  CHECK(rejection_18->find("227 KB") != std::string::npos);
  CHECK(hopper_tune_set(18).size() == 24 - 4);  // and 64 x 128 x 4: 279808 bytes
  // Steps 19-21: B_r 128 (two consumers) x B_c {64, 128} x stages {2, 3} x regs {224, 240}.
  for (const int step : {19, 20, 21}) {
    CHECK(hopper_tune_candidates(step).size() == 2 * 2 * 2 * 2);
    for (const KernelConfig& c : hopper_tune_set(step)) {
      CHECK(c.n_warps == 12);
      CHECK(producer_regs(c) >= 24);
    }
  }
  // Step 22: B_c {64, 128} x stages {2, 3, 4} x regs {224, 240}; its own O tile leaves room for
  // two stages only at B_c = 128 (Q + O + 3 x 64 KB is over 227 KB), all three at B_c = 64.
  // At d_head 64 all of them fit; at d_head 256 the axes are B_c {32, 64} and rule H1 leaves
  // B_c = 32 with 2 or 3 stages (a 64-row K + V stage is 64 KB there).
  const auto at_d_head = [](const std::vector<KernelConfig>& configs, int d_head) {
    std::vector<KernelConfig> out;
    for (const KernelConfig& c : configs)
      if (c.d_head == d_head) out.push_back(c);
    return out;
  };
  CHECK(hopper_tune_candidates(22).size() == 3 * 2 * 2 * 3 * 2);
  CHECK(at_d_head(hopper_tune_set(22), 128).size() == 2 * (3 * 2 + 1 * 2));
  for (const KernelConfig& c : at_d_head(hopper_tune_set(22), 128))
    CHECK((c.B_c == 64 || c.stages == 2));
  CHECK(at_d_head(hopper_tune_set(22), 64).size() == 2 * 2 * 3 * 2);
  const std::vector<KernelConfig> wide_heads = at_d_head(hopper_tune_set(22), 256);
  CHECK(wide_heads.size() == 2 * 2 * 2);
  for (const KernelConfig& c : wide_heads) {
    CHECK(c.B_c == 32);
    CHECK((c.stages == 2 || c.stages == 3));
    // The brief's budgets: Q + O + stages x (K + V) + alignment + barriers, and the registers.
    CHECK(smem_bytes(c) + c.B_r * c.d_head * kElementBytes <= kHopperMaxSmemBytes);
    CHECK(c.B_c / 2 + c.B_c / 4 + c.d_head / 2 + 32 <= c.consumer_regs);
  }
  KernelConfig wide_head_bc64{};
  wide_head_bc64.dtype = DType::BF16;
  wide_head_bc64.d_head = 256;
  wide_head_bc64.B_r = 128;
  wide_head_bc64.B_c = 64;
  wide_head_bc64.n_warps = 12;
  wide_head_bc64.stages = 2;
  wide_head_bc64.consumer_regs = 240;
  const auto wide_head_rejection = hopper_tune_rejection(22, wide_head_bc64);
  REQUIRE(wide_head_rejection.has_value());
  CHECK(wide_head_rejection->find("rule H1") != std::string::npos);
  CHECK(wide_head_rejection->find("B_c = 64") != std::string::npos);
  // Steps 19-21 stay d_head 128 only: their tune sets hold no other head dimension.
  for (const int step : {19, 20, 21})
    for (const KernelConfig& c : hopper_tune_set(step))
      CHECK(c.d_head == 128);
  KernelConfig deep{};
  deep.dtype = DType::FP16;
  deep.d_head = 128;
  deep.B_r = 128;
  deep.B_c = 128;
  deep.n_warps = 12;
  deep.stages = 3;
  deep.consumer_regs = 240;
  CHECK_FALSE(hopper_tune_rejection(21, deep).has_value());  // step 21 reuses Q's tile for O
  REQUIRE(hopper_tune_rejection(22, deep).has_value());
  CHECK(hopper_tune_rejection(22, deep)->find("Q, O and stages x (K + V)") != std::string::npos);
  // Rule H2: the accumulators of B_c = 256 do not fit 240 registers.
  KernelConfig wide{};
  wide.dtype = DType::FP16;
  wide.d_head = 128;
  wide.B_r = 128;
  wide.B_c = 256;
  wide.n_warps = 12;
  wide.stages = 1;
  wide.consumer_regs = 240;
  wide.stages = 2;
  // 2 stages of 256-row K and V exceed SMEM first (rule H1); with 64 rows of Q it is rule H2.
  CHECK(hopper_tune_rejection(19, wide)->find("rule H1") != std::string::npos);
  CHECK_THROWS_AS(hopper_tune_candidates(16), std::out_of_range);
}

TEST_CASE("selection keys as a Hopper step reads them") {
  CHECK(select_for_step("tune", 16) == select("tune"));
  CHECK(select_for_step("tune", 21) == hopper_tune_set(21));
  CHECK(select_for_step("all", 18) == hopper_tune_set(18));
  const auto prog = select_for_step("prog", 19);
  REQUIRE_FALSE(prog.empty());
  CHECK(std::find(prog.begin(), prog.end(), *step_picks(19).progression) != prog.end());
  CHECK(std::find(prog.begin(), prog.end(), *step_picks(19).hopper_h100) != prog.end());
  for (const KernelConfig& c : select_for_step("128,64", 20)) {
    CHECK(c.B_r == 128);
    CHECK(c.B_c == 64);
  }
  CHECK(select_for_step("128,64", 20).size() == 8);  // 2 dtypes x 2 stages x 2 register splits
  CHECK_THROWS_AS(select_for_step("fast", 20), std::invalid_argument);
}

TEST_CASE("a step's config per problem (StepDescriptor::problem_config, step 32)") {
  const KernelConfig three = with_dtype(headline_config(32, 64), DType::BF16);
  const KernelConfig two =
      with_dtype(parse_short_form("(FP16, 64, 128, 128, 12): stages_4+regs_240"), DType::BF16);
  REQUIRE(three.B_r == 192);
  // The chosen config is built: it is one of the step's picks (its variant).
  const std::vector<KernelConfig> picks = step_picks(32).all();
  CHECK(std::find(picks.begin(), picks.end(), with_dtype(two, DType::FP16)) != picks.end());
  Problem problem{.dtype = DType::BF16,
                  .batch = 2,
                  .seq_len = 2048,
                  .heads = 16,
                  .heads_kv = 16,
                  .d_head = 64,
                  .causal = true};
  CHECK(config_for_problem(32, three, problem) == two);
  CHECK_FALSE(unsupported_combination(32, two).has_value());
  problem.seq_len = 4096;  // past the threshold: the 192-row tiles
  CHECK(config_for_problem(32, three, problem) == three);
  problem.seq_len = 512;
  problem.causal = false;  // without the mask B_r = 192 at every N
  CHECK(config_for_problem(32, three, problem) == three);
  problem.causal = true;
  problem.heads = 160;  // a group of 160 heads does not fit 128 rows
  problem.heads_kv = 1;
  CHECK(config_for_problem(32, three, problem) == three);
  problem.heads = 16;
  problem.heads_kv = 16;
  problem.dtype = DType::E4M3;  // the FP8 path keeps its config
  CHECK(config_for_problem(32, with_dtype(three, DType::E4M3), problem) ==
        with_dtype(three, DType::E4M3));
  // Steps without the field keep the config they are given.
  problem.dtype = DType::BF16;
  const KernelConfig step31 = with_dtype(headline_config(31, 64), DType::BF16);
  CHECK(config_for_problem(31, step31, problem) == step31);
}

TEST_CASE("build plans") {
  const BuildPlan ci = build_plan(BuildSet::ci);
  // Every step once per dtype it runs (fp16 and bf16; an FP8 step e4m3 as well), steps 22+ at
  // each head dimension they support.
  std::size_t dtype_head_dimensions = 0;
  for (const StepDescriptor& step : versions::kEvery)
    dtype_head_dimensions += step.dtypes.size() * step.d_heads.size();
  CHECK(ci.instantiations.size() == dtype_head_dimensions);

  std::set<int> ci_steps;
  std::set<std::pair<int, int>> ci_step_heads;
  for (const auto& item : ci.instantiations) {
    ci_steps.insert(item.step);
    ci_step_heads.insert({item.step, item.config.d_head});
  }
  CHECK(ci_steps.size() == steps().size());
  for (const int d_head : {64, 128, 256})
    CHECK(ci_step_heads.count({22, d_head}) == 1);
  // prog and tune compile step 22 at every head dimension as well.
  for (const BuildSet set : {BuildSet::prog, BuildSet::tune}) {
    std::set<int> heads_22;
    for (const auto& item : build_plan(set, {22}).instantiations)
      heads_22.insert(item.config.d_head);
    CHECK(heads_22 == std::set<int>{64, 128, 256});
  }
  const BuildPlan prog = build_plan(BuildSet::prog);
  CHECK(prog.instantiations.size() >= 7 * 2 + 9 * 4 + 6 * 2);
  CHECK(std::is_sorted(prog.instantiations.begin(), prog.instantiations.end()));
  const BuildPlan tune = build_plan(BuildSet::tune, {7});
  CHECK(tune.instantiations.size() ==
        80);  // both dtypes of step 7's progression config are tune members
  const BuildPlan tuned_16 = build_plan(BuildSet::tune, {7, 8, 16}, {16});
  std::map<int, int> per_step;
  for (const auto& item : tuned_16.instantiations)
    ++per_step[item.step];
  CHECK(per_step[7] == 2 + 2);  // progression and Hopper picks, both dtypes
  CHECK(per_step[8] == 3 * 2);  // seed A100, seed 3090 and Hopper picks, both dtypes
  CHECK(per_step[16] == 80);    // every pick of step 16 is a tune config
  const BuildPlan all = build_plan(BuildSet::all, {1});
  for (const auto& skipped : all.skipped)
    CHECK(skipped.reason.find("B_c / 8 >= n_warps") != std::string::npos);
  CHECK(all.skipped.size() == 14);  // each entry's 128x32x8 shape, fp16 and bf16
  // A Hopper step in the tune set gets its own tune space, never the Ampere one.
  const BuildPlan tuned_18 = build_plan(BuildSet::tune, {18}, {18});
  CHECK(tuned_18.instantiations.size() == hopper_tune_set(18).size());
  for (const auto& item : tuned_18.instantiations)
    CHECK(is_hopper_config(item.config));
}

TEST_CASE("step lists") {
  CHECK(parse_step_list("1-16").size() == 16);
  CHECK(parse_step_list("16-21").size() == 6);
  CHECK(parse_step_list("7,16") == std::vector<int>{7, 16});
  CHECK(parse_step_list("3,1-2,3") == std::vector<int>{1, 2, 3});
  // Every refusal names the item and the steps there are, both tracks.
  const std::string steps_there_are = "the steps are 1–" + std::to_string(kLastStep) +
                                      " and the backward steps B1–" +
                                      step_name(versions::kLastBackward);
  CHECK_THROWS_WITH_AS(parse_step_list("0-3"), doctest::Contains("\"0\" is no step"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_step_list("0-3"), doctest::Contains(steps_there_are.c_str()),
                       std::invalid_argument);
  // The backward steps (101, 102, ...): by number, and a range over both tracks skips the gap.
  CHECK(parse_step_list("101-102") == std::vector<int>{101, 102});
  CHECK(
      parse_step_list(std::to_string(kLastStep) + "-" + std::to_string(versions::kFirstBackward)) ==
      std::vector<int>{kLastStep, versions::kFirstBackward});
  // ... and by the name the views and the CSV give them.
  CHECK(parse_step_list("B1-B2") == std::vector<int>{101, 102});
  CHECK(parse_step_list("7,b1") == std::vector<int>{7, 101});
  const std::string past_backward = std::to_string(versions::kLastBackward + 1);
  CHECK_THROWS_WITH_AS(parse_step_list(past_backward),
                       doctest::Contains(("\"" + past_backward + "\" is no step").c_str()),
                       std::invalid_argument);
  const std::string past_backward_name = step_name(versions::kLastBackward + 1);
  CHECK_THROWS_WITH_AS(parse_step_list(past_backward_name),
                       doctest::Contains(("\"" + past_backward_name + "\" is no step").c_str()),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_step_list("5-2"), doctest::Contains("runs backwards"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_step_list("x"), doctest::Contains("\"x\" is no step"),
                       std::invalid_argument);
}

TEST_CASE("a step as a person writes it") {
  CHECK(parse_step("7") == 7);
  CHECK(parse_step("B1") == versions::kFirstBackward);
  CHECK(parse_step("b2") == versions::kFirstBackward + 1);
  CHECK(parse_step(std::to_string(versions::kFirstBackward)) == versions::kFirstBackward);
  CHECK(parse_step(step_name(versions::kLastBackward)) == versions::kLastBackward);
  for (const char* text : {"", "0", "B0", "B", "-1", "7x", " 7", "B1.5"})
    CHECK_MESSAGE(!parse_step(text).has_value(), text);
  CHECK_FALSE(parse_step(std::to_string(kLastStep + 1)).has_value());
  CHECK_FALSE(parse_step(step_name(versions::kLastBackward + 1)).has_value());
  CHECK_FALSE(parse_step("100").has_value());  // between the tracks
}
