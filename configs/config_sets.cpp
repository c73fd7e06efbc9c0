#include "configs/config_sets.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <stdexcept>

#include "configs/launch_validation.hpp"
#include "kernels/versions/steps.hpp"

namespace flashscope::configs {

static_assert(versions::kFirst == kFirstStep && versions::kFirstBackward == kFirstBackwardStep,
              "configs/config_sets.hpp's first step numbers must match kernels/versions/steps.hpp");
// Constant-initialized (before any dynamic initialization), so reading them is safe anywhere.
const int kLastStep = versions::kLast;
const int kLastBackwardStep = versions::kLastBackward;

std::span<const StepDescriptor> step_descriptors() {
  return versions::kEvery;
}
std::span<const StepDescriptor> forward_step_descriptors() {
  return versions::kAll;
}
std::span<const StepDescriptor> backward_step_descriptors() {
  return versions::kBackward;
}

const StepDescriptor* find_step_descriptor(int step) {
  return versions::find(step);
}

namespace {

// ---- Data ---------------------------------------------------------------------------------

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
  if (versions::find(step) == nullptr)
    throw std::out_of_range("step " + step_name(step) + " does not exist (steps are " +
                            step_list_text(step_numbers()) + ")");
}

const StepDescriptor& check_hopper_step(int step) {
  const StepDescriptor& descriptor = step_descriptor(step);
  if (descriptor.track != Track::hopper)
    throw std::out_of_range("step " + std::to_string(step) + " is not a Hopper step (those are " +
                            std::to_string(kFirstHopperStep) + "–" + std::to_string(kLastStep) +
                            ")");
  return descriptor;
}

std::optional<KernelConfig> optional_config(std::string_view text) {
  if (text.empty()) return std::nullopt;
  return parse_short_form(text);
}

// The pick in every dtype the step is instantiated in (FP16, then BF16).
void append_each_dtype(std::vector<Instantiation>& out, int step, const KernelConfig& c) {
  for (const DType dtype : step_descriptor(step).dtypes)
    out.push_back({step, with_dtype(c, dtype)});
}

}  // namespace

const std::vector<StepInfo>& steps() {
  static const std::vector<StepInfo> kSteps = [] {
    std::vector<StepInfo> out;
    for (const StepDescriptor& step : versions::kEvery)
      out.push_back(
          {step.number, step.title, step.source_folder, step.cpp_namespace,
           std::vector<int>(step.static_head_counts.begin(), step.static_head_counts.end())});
    return out;
  }();
  return kSteps;
}

const StepInfo& step_info(int step) {
  check_step(step);
  for (const StepInfo& info : steps())
    if (info.step == step) return info;
  throw std::logic_error("configs::steps() lacks step " + step_name(step));
}

const StepDescriptor& step_descriptor(int step) {
  check_step(step);
  return *versions::find(step);
}

std::vector<KernelConfig> StepPicks::all() const {
  std::vector<KernelConfig> out;
  for (const auto& pick : {progression, seed_a100, seed_rtx3090, hopper, hopper_h100})
    if (pick) out.push_back(*pick);
  out.insert(out.end(), progression_at_other_d_heads.begin(), progression_at_other_d_heads.end());
  out.insert(out.end(), variants.begin(), variants.end());
  return out;
}

StepPicks step_picks(int step) {
  const StepPickTexts& texts = step_descriptor(step).picks;
  StepPicks picks;
  picks.progression = optional_config(texts.progression);
  picks.seed_a100 = optional_config(texts.seed_a100);
  picks.seed_rtx3090 = optional_config(texts.seed_rtx3090);
  picks.hopper = optional_config(texts.hopper_h200);
  picks.hopper_h100 = optional_config(texts.hopper_h100);
  for (const std::string_view text : texts.progression_at_other_d_heads)
    if (!text.empty()) picks.progression_at_other_d_heads.push_back(parse_short_form(text));
  for (const std::string_view text : texts.variants)
    if (!text.empty()) picks.variants.push_back(parse_short_form(text));
  return picks;
}

KernelConfig headline_config(int step) {
  const StepPicks picks = step_picks(step);
  if (picks.hopper) return *picks.hopper;
  if (picks.progression) return *picks.progression;
  return *picks.seed_a100;
}

KernelConfig headline_config(int step, int d_head) {
  const KernelConfig headline = headline_config(step);
  if (headline.d_head == d_head) return headline;
  for (const KernelConfig& c : step_picks(step).progression_at_other_d_heads)
    if (c.d_head == d_head) return c;
  throw std::invalid_argument(
      *step_refusal_message(step, problem_at_d_head(d_head, step_descriptor(step).pass)));
}

std::vector<int> step_numbers() {
  std::vector<int> out;
  for (const StepDescriptor& step : versions::kEvery)
    out.push_back(step.number);
  return out;
}

Problem problem_at_d_head(int d_head, Pass pass) {
  Problem problem = multi_head_problem(DType::FP16, 1, 1024, 16, d_head);
  problem.pass = pass;
  return problem;
}

std::vector<int> steps_running(Axis axis, const Problem& problem) {
  const AxisSpec& spec = axis_spec(axis);
  std::vector<int> out;
  // Steps of the problem's pass only (a backward problem's d_head is no use on a forward step),
  // but for the pass axis itself, whose answer is the steps of that pass.
  for (const StepDescriptor& step : versions::kEvery)
    if (!spec.refused_by(step, problem) && (axis == Axis::pass || step.pass == problem.pass))
      out.push_back(step.number);
  return out;
}

std::vector<int> steps_writing_lse() {
  std::vector<int> out;
  for (const StepDescriptor& step : versions::kEvery)
    if (step.writes_lse) out.push_back(step.number);
  return out;
}

std::optional<std::string> step_refusal_message(int step, const Problem& problem) {
  const StepDescriptor* descriptor = versions::find(step);
  if (descriptor == nullptr)
    return "step " + step_name(step) + " does not exist (steps are " +
           step_list_text(step_numbers()) + ", kernels/versions/steps.hpp)";
  const std::optional<AxisRefusal> refusal = first_refused_axis(*descriptor, problem);
  if (!refusal) return std::nullopt;
  // The steps named are those of the problem's pass (a backward problem's grouped heads are no
  // use on forward step 26); where none has the value yet, the other pass's are named as such.
  const std::vector<int> others = steps_running(refusal->axis->axis, problem);
  Problem other_pass = problem;
  other_pass.pass = problem.pass == Pass::forward ? Pass::backward : Pass::forward;
  const std::vector<int> elsewhere = steps_running(refusal->axis->axis, other_pass);
  if (others.empty() && !elsewhere.empty())
    return "step " + step_name(step) + " " + refusal->reason + "; " +
           refusal->axis->phrase(problem) + " runs on no " + std::string(pass_name(problem.pass)) +
           " step yet (on " + step_list_text(elsewhere) + " of the " +
           std::string(pass_name(other_pass.pass)) + " pass)";
  return "step " + step_name(step) + " " + refusal->reason + "; " + refusal->axis->phrase(problem) +
         " runs on " + step_list_text(others) + " (their kernels/versions/*/step.hpp declare it)";
}

std::string d_head_support_text() {
  std::set<int> d_heads;
  for (const StepDescriptor& step : versions::kEvery)
    d_heads.insert(step.d_heads.begin(), step.d_heads.end());
  const auto ranges = [](const std::vector<int>& steps) {
    std::string text;
    for (std::size_t i = 0; i < steps.size();) {
      std::size_t j = i;
      while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1)
        ++j;
      text += (text.empty() ? "" : ",") + std::to_string(steps[i]) +
              (j > i ? "-" + std::to_string(steps[j]) : "");
      i = j + 1;
    }
    return text;
  };
  std::string text;
  for (const int d_head : d_heads) {
    // Both passes' steps: the help of --d-head serves forward and backward steps alike.
    std::vector<int> steps = steps_running(Axis::d_head, problem_at_d_head(d_head));
    for (const int backward :
         steps_running(Axis::d_head, problem_at_d_head(d_head, Pass::backward)))
      steps.push_back(backward);
    text += (text.empty() ? "d_head " : "; ") + std::to_string(d_head) + " on step" +
            (steps.size() == 1 ? " " : "s ") + ranges(steps);
  }
  return text;
}

std::string step_list_text(const std::vector<int>& steps) {
  if (steps.empty()) return "no step";
  // Consecutive steps collapse into a range: "steps 1-15, 18-26".
  std::string text = steps.size() == 1 ? "step " : "steps ";
  for (std::size_t i = 0; i < steps.size();) {
    std::size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1)
      ++j;
    text += (i == 0 ? "" : ", ") + step_name(steps[i]) +
            (j > i ? (j == i + 1 ? ", " : "-") + step_name(steps[j]) : std::string());
    i = j + 1;
  }
  return text;
}

// Spec §5.1: the base progression, the progression entries of the Ampere steps (1–7).
std::vector<KernelConfig> progression() {
  std::vector<KernelConfig> out;
  for (const StepDescriptor& step : versions::kAll)
    if (step.track == Track::ampere && !step.picks.progression.empty())
      out.push_back(parse_short_form(step.picks.progression));
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

// hopper-track.md §2: the axes of the step's descriptor, in nesting order (dtype, d_head, B_r, B_c,
// stages, consumer_regs), B_c and stages as the descriptor sets them for that d_head. n_warps
// follows from B_r and whether the step has a producer warpgroup. B_c is a power of two from 32 to
// 128 so far: the kernels need N to be a multiple of B_r and B_c, and the sweep's lengths are
// powers of two (B_c = 256 would not leave the accumulators enough registers; at d_head = 256 only
// B_c = 32 leaves the shared memory two K/V stages).
std::vector<KernelConfig> hopper_tune_candidates(int step) {
  const StepTuning& axes = check_hopper_step(step).tuning;
  const int producer_warps = axes.producer_warpgroups * kWarpgroupWarps;
  std::vector<KernelConfig> out;
  for (const DType dtype : kTuneDtypes)
    for (const int d_head : step_descriptor(step).d_heads)
      for (const int B_r : axes.B_r)
        for (const int B_c : axes.B_c_at(d_head))
          for (const int stages : axes.stages_at(d_head))
            for (const int regs : axes.consumer_regs) {
              KernelConfig c{};
              c.dtype = dtype;
              c.d_head = d_head;
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
           "'s accumulators at B_c = " + std::to_string(c.B_c) +
           " and d_head = " + std::to_string(c.d_head) + " need about " + std::to_string(needed) +
           " registers per consumer thread, more than its " + std::to_string(budget);
  return std::nullopt;
}

std::vector<KernelConfig> hopper_tune_set(int step) {
  std::vector<KernelConfig> out;
  for (const KernelConfig& c : hopper_tune_candidates(step))
    if (!hopper_tune_rejection(step, c)) out.push_back(c);
  return out;
}

std::vector<KernelConfig> select_for_step(std::string_view key, int step) {
  // A backward step has no tune space yet: every key yields its picks (the key itself checked).
  if (step_descriptor(step).pass == Pass::backward) {
    select(key);  // throws for a key that is none
    const std::vector<KernelConfig> picks = step_picks(step).all();
    std::set<KernelConfig> unique;
    for (const KernelConfig& pick : picks)
      for (const DType dtype : step_descriptor(step).dtypes)
        unique.insert(with_dtype(pick, dtype));
    return {unique.begin(), unique.end()};
  }
  if (step_descriptor(step).track != Track::hopper) return select(key);
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
         "configs of that block shape, e.g. 128,64); for a Hopper step (" +
         std::to_string(kFirstHopperStep) + "–" + std::to_string(kLastStep) +
         ") prog yields its progression config and picks, tune, all and prog_all its own tune "
         "set";
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
  for (const StepDescriptor& step : versions::kEvery)
    if (step.tuning.by_default) out.push_back(step.number);
  return out;
}

BuildPlan build_plan(BuildSet set, const std::vector<int>& step_filter,
                     const std::vector<int>& tune_steps) {
  const std::vector<int> tuned = tune_steps.empty() ? default_tune_steps() : tune_steps;
  std::vector<Instantiation> wanted;
  for (const int step : step_numbers()) {
    if (!step_filter.empty() &&
        std::find(step_filter.begin(), step_filter.end(), step) == step_filter.end())
      continue;
    const StepPicks picks = step_picks(step);
    if (set == BuildSet::ci) {
      append_each_dtype(wanted, step, picks.progression ? *picks.progression : *picks.seed_a100);
      for (const KernelConfig& c : picks.progression_at_other_d_heads)
        append_each_dtype(wanted, step, c);
      continue;
    }
    for (const KernelConfig& pick : picks.all())
      append_each_dtype(wanted, step, pick);
    const bool hopper = step_descriptor(step).track == Track::hopper;
    // The seed's tune space and extended progression are forward configs (B_r split over the
    // warps); a backward step has no tune axes yet and is built with its picks alone.
    if (step_descriptor(step).pass == Pass::backward) continue;
    if ((set == BuildSet::tune || set == BuildSet::all) &&
        std::find(tuned.begin(), tuned.end(), step) != tuned.end())
      for (const KernelConfig& c : hopper ? hopper_tune_set(step) : tune_set())
        wanted.push_back({step, c});
    if (set == BuildSet::all && !hopper)
      for (const KernelConfig& c : extended_progression())
        append_each_dtype(wanted, step, c);
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

KernelConfig config_for_problem(int step, const KernelConfig& config, const Problem& problem) {
  const StepDescriptor& descriptor = step_descriptor(step);
  if (descriptor.problem_config == nullptr) return config;
  return descriptor.problem_config(config, problem).value_or(config);
}

std::optional<int> parse_step(std::string_view text) {
  // Derived from the one spelling of a step (step_name), so the two cannot drift apart: a step
  // is its name ("7", "B1", the backward names in either case) or its number ("101").
  const auto same_ignoring_case = [](std::string_view a, std::string_view b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
      return std::tolower(static_cast<unsigned char>(x)) ==
             std::tolower(static_cast<unsigned char>(y));
    });
  };
  for (const StepDescriptor& step : step_descriptors())
    if (text == std::to_string(step.number) || same_ignoring_case(text, step_name(step.number)))
      return step.number;
  return std::nullopt;
}

std::vector<int> parse_step_list(std::string_view text) {
  const auto fail = [text](const std::string& problem) {
    throw std::invalid_argument("invalid step list \"" + std::string(text) + "\": " + problem);
  };
  const auto parse = [&fail](std::string_view item) {
    const std::optional<int> step = parse_step(item);
    if (!step)
      fail("\"" + std::string(item) + "\" is no step: the steps are " + std::to_string(kFirstStep) +
           "–" + std::to_string(kLastStep) + " and the backward steps " +
           step_name(versions::kFirstBackward) + "–" + step_name(versions::kLastBackward) +
           " (or " + std::to_string(versions::kFirstBackward) + "–" +
           std::to_string(versions::kLastBackward) + ")");
    return *step;
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
      // A range over both tracks ("20-102") skips the numbers between them.
      for (int step = first; step <= last; ++step)
        if (versions::find(step) != nullptr) out.insert(step);
    } else {
      out.insert(parse(item));
    }
    begin = end + 1;
  }
  return {out.begin(), out.end()};
}

}  // namespace flashscope::configs
