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
  };
  return kSteps;
}

const StepInfo& step_info(int step) {
  check_step(step);
  return steps()[static_cast<std::size_t>(step - kFirstStep)];
}

StepPicks step_picks(int step) {
  check_step(step);
  StepPicks picks;
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

std::string selection_keys_help() {
  return "valid keys are prog (7 progression configs), prog_all (56, extended progression), "
         "tune (80 auto-tune configs), all (the seed's build list, 80) and B_r,B_c (tune "
         "configs of that block shape, e.g. 128,64)";
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
    for (const auto& pick : {picks.progression, picks.seed_a100, picks.seed_rtx3090, picks.hopper})
      if (pick) append_both_dtypes(wanted, step, *pick);
    if ((set == BuildSet::tune || set == BuildSet::all) &&
        std::find(tuned.begin(), tuned.end(), step) != tuned.end())
      for (const KernelConfig& c : tune_set())
        wanted.push_back({step, c});
    if (set == BuildSet::all)
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
      fail("step " + std::to_string(value) + " is outside 1–16");
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
