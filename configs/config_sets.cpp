#include "configs/config_sets.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <stdexcept>

#include "kernels/common/launch_validation.hpp"

namespace flashscope::configs {

namespace {

// ---- Data ---------------------------------------------------------------------------------

// Spec §5.1: the base progression, one entry per step 1–7.
constexpr std::string_view kProgression[] = {
    "(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles",
    "(FP16, 128, 64, 64, 4): async+swizzled+load_0_0_0_tiles",
    "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_0_0_tiles",
    "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_2_2_2_tiles",
    "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_2_2_2_tiles+buffer",
    "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_2_2_2_tiles+buffer+opt_softmax",
    "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_2_2_tiles+opt_softmax",
};

// Spec §4.0: the configs whose SASS the seed archived per GPU for steps 8–16, and the Hopper
// pick flashscope measured: the fastest tune config of that step at N = 4096, B = 16, H = 16,
// fp16, on an H200 (CUDA events, median; the same config was fastest or within 1 % in bf16).
// docs/versions/NN.md gives each step's measurement.
struct PickRow {
  int step;
  std::string_view a100;
  std::string_view rtx3090;
  std::string_view hopper;
};
constexpr PickRow kPicks[] = {
    {8, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+buffer",
     "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles+buffer"},
    {9, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_2_tiles+buffer",
     "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_0_tiles+opt_softmax"},
    {10, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles+opt_softmax",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+opt_softmax"},
    {11, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+opt_softmax",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+opt_softmax"},
    {12, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles+opt_softmax",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+opt_softmax",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_2_tiles"},
    {13, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_0_tiles",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_2_tiles+buffer",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+buffer+opt_softmax"},
    {14, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_0_tiles",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+buffer",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+buffer+opt_softmax"},
    {15, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_0_tiles",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_2_tiles+buffer+opt_softmax",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+opt_softmax"},
    {16, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_0_tiles+buffer",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+buffer+opt_softmax",
     "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+buffer+opt_softmax"},
};

// Step 7's Hopper pick, measured the same way (ties with 128x64 load_2_2_2+opt_softmax).
constexpr std::string_view kStep7HopperPick =
    "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_0_0_tiles+opt_softmax";

// hopper-track.md §2: each Hopper step's progression config (the config the step was designed
// around, before any measurement) and the picks measured by flashscope: the fastest config of the
// step's tune set at N = 4096, B = 16, H = 16, fp16, on an H200 and on an H100 (CUDA events,
// median; results/h200/hopper.csv, results/h100/hopper.csv). The top of each tune set is flat:
// the runners-up are within 0.3–4 %, docs/versions/NN.md gives the step's autotune table.
struct HopperStepRow {
  int step;
  std::string_view progression;
  std::string_view h200;
  std::string_view h100;
};
constexpr HopperStepRow kHopperSteps[] = {
    {17, "(FP16, 128, 128, 128, 8): stages_1", "(FP16, 128, 64, 128, 4): stages_1",
     "(FP16, 128, 64, 128, 4): stages_1"},
    {18, "(FP16, 128, 128, 128, 8): stages_2", "(FP16, 128, 128, 128, 8): stages_3",
     "(FP16, 128, 128, 128, 8): stages_2"},
    {19, "(FP16, 128, 128, 128, 12): stages_2+regs_240",
     "(FP16, 128, 128, 128, 12): stages_2+regs_224",
     "(FP16, 128, 128, 128, 12): stages_3+regs_240"},
    {20, "(FP16, 128, 128, 128, 12): stages_2+regs_240",
     "(FP16, 128, 128, 128, 12): stages_2+regs_224",
     "(FP16, 128, 128, 128, 12): stages_2+regs_240"},
    {21, "(FP16, 128, 128, 128, 12): stages_2+regs_240",
     "(FP16, 128, 128, 128, 12): stages_3+regs_224",
     "(FP16, 128, 128, 128, 12): stages_3+regs_240"},
    // Step 22 keeps a separate O tile, so B_c = 128 leaves room for two K/V stages only.
    {22, "(FP16, 128, 128, 128, 12): stages_2+regs_240",
     "(FP16, 128, 128, 128, 12): stages_2+regs_224",
     "(FP16, 128, 128, 128, 12): stages_2+regs_240"},
};

// hopper-track.md §2: the Hopper tune axes per step, in nesting order (dtype, B_r, B_c, stages,
// consumer_regs). n_warps follows from B_r and whether the step has a producer warpgroup.
struct HopperTuneAxes {
  std::vector<int> B_r, B_c, stages, consumer_regs;
};
// B_c is 64 or 128: the kernels need N to be a multiple of B_r and B_c, and the sweep's lengths
// are powers of two (B_c = 256 would not leave the accumulators enough registers).
HopperTuneAxes hopper_tune_axes(int step) {
  if (step == 17) return {{64, 128}, {64, 128}, {1}, {0}};
  if (step == 18) return {{64, 128}, {64, 128}, {2, 3, 4}, {0}};
  // Step 22's O tile frees room for a fourth stage at B_c = 64 (filtered by SMEM at B_c = 128).
  if (step == 22) return {{128}, {64, 128}, {2, 3, 4}, {224, 240}};
  return {{128}, {64, 128}, {2, 3}, {224, 240}};
}

// Registers a consumer thread needs: its accumulator tiles (fp32 S: B_c / 2, its 16-bit P:
// B_c / 4, fp32 O: d_head / 2 — in step 21 S of one block is live beside P of the previous one,
// which is the same count) plus 32 for addresses, loop state and the softmax statistics.
int estimated_consumer_registers(const KernelConfig& c) {
  return c.B_c / 2 + c.B_c / 4 + c.d_head / 2 + 32;
}

// Spec §5.2: the auto-tune axes, in nesting order.
constexpr DType kTuneDtypes[] = {DType::BF16, DType::FP16};
constexpr int kTuneDHeads[] = {128};
constexpr int kTuneBr[] = {64, 128};
constexpr int kTuneBc[] = {32, 64};
constexpr int kTuneWarps[] = {4};
constexpr int kTuneLoads[] = {0, 2};
constexpr bool kFlags[] = {false, true};

// Spec §5.1: the extended progression's shape axes, in nesting order.
constexpr int kExtendedBr[] = {128, 64};
constexpr int kExtendedBc[] = {128, 64, 32};
constexpr int kExtendedWarps[] = {4, 8};

void check_step(int step) {
  if (step < kFirstStep || step > kLastStep)
    throw std::out_of_range("step " + std::to_string(step) + " does not exist (steps are " +
                            std::to_string(kFirstStep) + "–" + std::to_string(kLastStep) + ")");
}

void check_hopper_step(int step) {
  check_step(step);
  if (step < kFirstHopperStep)
    throw std::out_of_range("step " + std::to_string(step) + " is not a Hopper step (those are " +
                            std::to_string(kFirstHopperStep) + "–" + std::to_string(kLastStep) +
                            ")");
}

const HopperStepRow& hopper_step_row(int step) {
  check_hopper_step(step);
  return kHopperSteps[step - kFirstHopperStep];
}

std::optional<KernelConfig> optional_config(std::string_view text) {
  if (text.empty()) return std::nullopt;
  return parse_short_form(text);
}

void append_both_dtypes(std::vector<Instantiation>& out, int step, const KernelConfig& c) {
  out.push_back({step, with_dtype(c, DType::FP16)});
  out.push_back({step, with_dtype(c, DType::BF16)});
}

}  // namespace

const std::vector<StepInfo>& steps() {
  static const std::vector<StepInfo> kSteps = {
      {1, "Base implementation", "v01_07", "v01_07", {}},
      {2, "Swizzling", "v01_07", "v01_07", {}},
      {3, "Eagerly loading K & V blocks", "v01_07", "v01_07", {}},
      {4, "Interleaving on-chip LD/ST with computation", "v01_07", "v01_07", {}},
      {5, "Double-buffering SMEM->RF loads", "v01_07", "v01_07", {}},
      {6, "Improving FP32 throughput", "v01_07", "v01_07", {}},
      {7, "Auto-tuning", "v01_07", "v01_07", {}},
      {8, "Reducing IADD3, LOP3, SHF", "v08", "v08", {}},
      {9, "Reducing IMAD.MOV.U32 and MOV", "v09", "v09", {}},
      {10, "Removing CS2R + optimizing initial softmax iteration", "v10", "v10", {}},
      {11, "Encoded swizzling RF->SMEM", "v11", "v11", {}},
      {12, "Miscellaneous code changes", "v12", "v12", {}},
      {13, "Iterating backwards", "v13", "v13", {}},
      {14, "Cache configuration", "v14", "v14", {}},
      {15, "Tiling along d_head", "v15", "v15", {}},
      {16, "Static GMEM stride", "v16", "v16", {16}},
      // The Hopper track (hopper-track.md §3). Step 17 keeps step 16's cp.async copies and with
      // them the static GMEM stride; from step 18 TMA addresses the tensors from their maps.
      {17, "Warpgroup MMA (wgmma)", "v17", "v17", {16}},
      {18, "TMA and an mbarrier pipeline", "v18", "v18", {}},
      {19, "Warp specialization and register reallocation", "v19", "v19", {}},
      {20, "Ping-pong scheduling of the consumer warpgroups", "v20", "v20", {}},
      {21, "Intra-warpgroup overlap of GEMM and softmax", "v21", "v21", {}},
      {22, "Persistent kernel with a tile scheduler", "v22", "v22", {}},
  };
  return kSteps;
}

const StepInfo& step_info(int step) {
  check_step(step);
  return steps()[static_cast<std::size_t>(step - kFirstStep)];
}

std::vector<KernelConfig> StepPicks::all() const {
  std::vector<KernelConfig> out;
  for (const auto& pick : {progression, seed_a100, seed_rtx3090, hopper, hopper_h100})
    if (pick) out.push_back(*pick);
  return out;
}

StepPicks step_picks(int step) {
  check_step(step);
  StepPicks picks;
  if (step >= kFirstHopperStep) {
    const HopperStepRow& row = hopper_step_row(step);
    picks.progression = parse_short_form(row.progression);
    picks.hopper = optional_config(row.h200);
    picks.hopper_h100 = optional_config(row.h100);
    return picks;
  }
  if (step <= 7) {
    picks.progression = parse_short_form(kProgression[step - 1]);
    if (step == 7) picks.hopper = optional_config(kStep7HopperPick);
    return picks;
  }
  for (const PickRow& row : kPicks) {
    if (row.step != step) continue;
    picks.seed_a100 = parse_short_form(row.a100);
    picks.seed_rtx3090 = parse_short_form(row.rtx3090);
    picks.hopper = optional_config(row.hopper);
  }
  return picks;
}

KernelConfig headline_config(int step) {
  const StepPicks picks = step_picks(step);
  if (picks.hopper) return *picks.hopper;
  if (picks.progression) return *picks.progression;
  return *picks.seed_a100;
}

std::vector<KernelConfig> progression() {
  std::vector<KernelConfig> out;
  for (const std::string_view text : kProgression)
    out.push_back(parse_short_form(text));
  return out;
}

std::vector<KernelConfig> extended_progression() {
  std::vector<KernelConfig> out;
  for (const KernelConfig& base : progression()) {
    for (const int B_r : kExtendedBr) {
      for (const int B_c : kExtendedBc) {
        for (const int n_warps : kExtendedWarps) {
          if ((B_r < 128 && n_warps == 8) || B_r < B_c) continue;
          KernelConfig c = base;
          c.B_r = B_r;
          c.B_c = B_c;
          c.n_warps = n_warps;
          out.push_back(c);
        }
      }
    }
  }
  return out;
}

std::vector<KernelConfig> tune_candidates() {
  std::vector<KernelConfig> out;
  for (const DType dtype : kTuneDtypes)
    for (const int d_head : kTuneDHeads)
      for (const int B_r : kTuneBr)
        for (const int B_c : kTuneBc)
          for (const int n_warps : kTuneWarps)
            for (const int q : kTuneLoads)
              for (const int k : kTuneLoads)
                for (const int v : kTuneLoads)
                  for (const bool buffer : kFlags)
                    for (const bool opt_softmax : kFlags)
                      out.push_back(KernelConfig{dtype, d_head, B_r, B_c, n_warps, true, true, true,
                                                 q, k, v, buffer, opt_softmax});
  return out;
}

std::optional<std::string> tune_rejection(const KernelConfig& c) {
  if (!c.async_copy && c.eager_load_blocks) return "rule 1: eager loading needs async copies";
  if (c.Q_mma_load_K_fragments != c.K_mma_load_K_fragments && c.Q_mma_load_K_fragments != 0)
    return "rule 2: a piecewise Q load must match K's";
  if (c.B_r == 64) {
    if (c.n_warps == 8) return "rule 3: B_r = 64 with 8 warps";
    if (c.B_c == 32 && c.Q_mma_load_K_fragments == 0)
      return "rule 4: B_r = 64, B_c = 32 with a resident Q";
    if (c.B_c == 64 && c.Q_mma_load_K_fragments != 0)
      return "rule 5: B_r = 64, B_c = 64 with a piecewise Q";
  } else if (c.B_r == 128 && c.Q_mma_load_K_fragments == 0) {
    return "rule 6: B_r = 128 with a resident Q (64 more registers than fit)";
  }
  return std::nullopt;
}

std::vector<KernelConfig> tune_set() {
  std::vector<KernelConfig> out;
  for (const KernelConfig& c : tune_candidates())
    if (!tune_rejection(c)) out.push_back(c);
  return out;
}

std::vector<KernelConfig> build_list() {
  const std::vector<KernelConfig> tune = tune_set();
  const std::set<KernelConfig> unique(tune.begin(), tune.end());
  return {unique.begin(), unique.end()};
}

std::vector<KernelConfig> select(std::string_view key) {
  if (key.starts_with("prog"))
    return key.find("all") != std::string_view::npos ? extended_progression() : progression();
  if (key == "all") return build_list();
  if (key == "tune") return tune_set();
  if (const std::size_t comma = key.find(','); comma != std::string_view::npos) {
    const auto parse = [key](std::string_view item) {
      int value = 0;
      const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
      if (error != std::errc() || end != item.data() + item.size() || item.empty())
        throw std::invalid_argument("invalid kernels key \"" + std::string(key) +
                                    "\": expected B_r,B_c as two integers, e.g. 128,64");
      return value;
    };
    const int B_r = parse(key.substr(0, comma));
    const int B_c = parse(key.substr(comma + 1));
    std::vector<KernelConfig> out;
    for (const KernelConfig& c : tune_set())
      if (c.B_r == B_r && c.B_c == B_c) out.push_back(c);
    return out;
  }
  throw std::invalid_argument("invalid kernels key \"" + std::string(key) +
                              "\": " + selection_keys_help());
}

std::vector<KernelConfig> hopper_tune_candidates(int step) {
  check_hopper_step(step);
  const HopperTuneAxes axes = hopper_tune_axes(step);
  const int producer_warps = step >= 19 ? kWarpgroupWarps : 0;
  std::vector<KernelConfig> out;
  for (const DType dtype : kTuneDtypes)
    for (const int B_r : axes.B_r)
      for (const int B_c : axes.B_c)
        for (const int stages : axes.stages)
          for (const int regs : axes.consumer_regs) {
            KernelConfig c{};
            c.dtype = dtype;
            c.d_head = 128;
            c.B_r = B_r;
            c.B_c = B_c;
            c.n_warps = B_r / kWarpgroupRows * kWarpgroupWarps + producer_warps;
            c.stages = stages;
            c.consumer_regs = regs;
            out.push_back(c);
          }
  return out;
}

std::optional<std::string> hopper_tune_rejection(int step, const KernelConfig& c) {
  check_hopper_step(step);
  if (auto reason = unsupported_combination(step, c)) return "rule H1: " + *reason;
  const int budget = c.consumer_regs != 0 ? c.consumer_regs : 255;
  const int needed = estimated_consumer_registers(c);
  if (needed > budget)
    return "rule H2: step " + std::to_string(step) +
           "'s accumulators at B_c = " + std::to_string(c.B_c) + " need about " +
           std::to_string(needed) + " registers per consumer thread, more than its " +
           std::to_string(budget);
  return std::nullopt;
}

std::vector<KernelConfig> hopper_tune_set(int step) {
  std::vector<KernelConfig> out;
  for (const KernelConfig& c : hopper_tune_candidates(step))
    if (!hopper_tune_rejection(step, c)) out.push_back(c);
  return out;
}

std::vector<KernelConfig> select_for_step(std::string_view key, int step) {
  check_step(step);
  if (step < kFirstHopperStep) return select(key);
  if (key.starts_with("prog") && key.find("all") == std::string_view::npos) {
    const std::vector<KernelConfig> picks = step_picks(step).all();
    const std::set<KernelConfig> unique(picks.begin(), picks.end());
    return {unique.begin(), unique.end()};
  }
  if (key.starts_with("prog") || key == "all" || key == "tune") return hopper_tune_set(step);
  if (key.find(',') != std::string_view::npos) {
    const std::vector<KernelConfig> shaped = select(key);  // validates "B_r,B_c"
    (void)shaped;
    const std::size_t comma = key.find(',');
    const int B_r = std::stoi(std::string(key.substr(0, comma)));
    const int B_c = std::stoi(std::string(key.substr(comma + 1)));
    std::vector<KernelConfig> out;
    for (const KernelConfig& c : hopper_tune_set(step))
      if (c.B_r == B_r && c.B_c == B_c) out.push_back(c);
    return out;
  }
  return select(key);  // throws with the list of valid keys
}

std::string selection_keys_help() {
  return "valid keys are prog (7 progression configs), prog_all (56, extended progression), "
         "tune (80 auto-tune configs), all (the seed's build list, 80) and B_r,B_c (tune "
         "configs of that block shape, e.g. 128,64); for a Hopper step (17–22) prog yields its "
         "progression config and picks, tune, all and prog_all its own tune set";
}

std::optional<BuildSet> build_set_from_string(std::string_view name) {
  if (name == "ci") return BuildSet::ci;
  if (name == "prog") return BuildSet::prog;
  if (name == "tune") return BuildSet::tune;
  if (name == "all") return BuildSet::all;
  return std::nullopt;
}

std::string_view build_set_name(BuildSet set) {
  switch (set) {
    case BuildSet::ci:
      return "ci";
    case BuildSet::prog:
      return "prog";
    case BuildSet::tune:
      return "tune";
    case BuildSet::all:
      return "all";
  }
  return "?";
}

std::vector<int> default_tune_steps() {
  std::vector<int> out;
  for (int step = 7; step <= kLastStep; ++step)
    out.push_back(step);
  return out;
}

BuildPlan build_plan(BuildSet set, const std::vector<int>& step_filter,
                     const std::vector<int>& tune_steps) {
  const std::vector<int> tuned = tune_steps.empty() ? default_tune_steps() : tune_steps;
  std::vector<Instantiation> wanted;
  for (int step = kFirstStep; step <= kLastStep; ++step) {
    if (!step_filter.empty() &&
        std::find(step_filter.begin(), step_filter.end(), step) == step_filter.end())
      continue;
    const StepPicks picks = step_picks(step);
    if (set == BuildSet::ci) {
      append_both_dtypes(wanted, step, picks.progression ? *picks.progression : *picks.seed_a100);
      continue;
    }
    for (const KernelConfig& pick : picks.all())
      append_both_dtypes(wanted, step, pick);
    const bool hopper = step >= kFirstHopperStep;
    if ((set == BuildSet::tune || set == BuildSet::all) &&
        std::find(tuned.begin(), tuned.end(), step) != tuned.end())
      for (const KernelConfig& c : hopper ? hopper_tune_set(step) : tune_set())
        wanted.push_back({step, c});
    if (set == BuildSet::all && !hopper)
      for (const KernelConfig& c : extended_progression())
        append_both_dtypes(wanted, step, c);
  }

  BuildPlan plan;
  std::set<Instantiation> seen;
  for (const Instantiation& item : wanted) {
    if (!seen.insert(item).second) continue;
    if (auto reason = unsupported_combination(item.step, item.config))
      plan.skipped.push_back({item, *reason});
    else
      plan.instantiations.push_back(item);
  }
  std::sort(plan.instantiations.begin(), plan.instantiations.end());
  return plan;
}

KernelConfig with_dtype(KernelConfig c, DType dtype) {
  c.dtype = dtype;
  return c;
}

std::vector<int> parse_step_list(std::string_view text) {
  const auto fail = [text](const std::string& problem) {
    throw std::invalid_argument("invalid step list \"" + std::string(text) + "\": " + problem);
  };
  const auto parse = [&fail](std::string_view item) {
    int value = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || error != std::errc() || end != item.data() + item.size())
      fail("\"" + std::string(item) + "\" is not a step number");
    if (value < kFirstStep || value > kLastStep)
      fail("step " + std::to_string(value) + " is outside " + std::to_string(kFirstStep) + "–" +
           std::to_string(kLastStep));
    return value;
  };
  std::set<int> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string_view item = text.substr(begin, end - begin);
    if (const std::size_t dash = item.find('-'); dash != std::string_view::npos) {
      const int first = parse(item.substr(0, dash));
      const int last = parse(item.substr(dash + 1));
      if (first > last) fail("range " + std::string(item) + " runs backwards");
      for (int step = first; step <= last; ++step)
        out.insert(step);
    } else {
      out.insert(parse(item));
    }
    begin = end + 1;
  }
  return {out.begin(), out.end()};
}

}  // namespace flashscope::configs
