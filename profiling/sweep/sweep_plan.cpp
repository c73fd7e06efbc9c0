#include "profiling/sweep/sweep_plan.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "configs/config_sets.hpp"
#include "configs/launch_validation.hpp"
#include "kernels/common/text.hpp"
#include "profiling/cupti_metrics.hpp"

namespace flashscope {

namespace {

std::vector<DType> dtypes_of(const std::vector<KernelConfig>& configs) {
  std::set<DType> dtypes;
  for (const KernelConfig& c : configs)
    dtypes.insert(c.dtype);
  return {dtypes.begin(), dtypes.end()};
}

std::vector<int> d_heads_of(const std::vector<KernelConfig>& configs) {
  std::set<int> d_heads;
  for (const KernelConfig& c : configs)
    d_heads.insert(c.d_head);
  return {d_heads.begin(), d_heads.end()};
}

// The configs the options select for `step`, in every measured dtype, built or not; a set's
// configs at the listed head dimensions only.
std::vector<KernelConfig> selected_configs(const SweepOptions& options, int step,
                                           const KernelRegistry& registry) {
  const std::vector<int> d_heads = axis_values(options, Axis::d_head);
  const std::vector<int> dtypes = axis_values(options, Axis::dtype);
  if (!options.configs.empty()) return options.configs;
  std::vector<KernelConfig> base;
  if (options.set_key == "prog") {
    base = configs::step_picks(step).all();
  } else if (options.set_key == "built") {
    for (const KernelEntry* entry : registry.entries_of_step(step))
      base.push_back(entry->config);
  } else {
    base = configs::select_for_step(options.set_key, step);
  }
  // A set names a shape and feature list; it is measured in each requested dtype the step runs
  // (another dtype is the step's refusal, noted by the plan, not a config this binary lacks).
  const DTypeList& step_dtypes = configs::step_descriptor(step).dtypes;
  std::set<KernelConfig> unique;
  for (const KernelConfig& c : base)
    if (std::find(d_heads.begin(), d_heads.end(), c.d_head) != d_heads.end())
      for (const int dtype : dtypes)
        if (step_dtypes.contains(static_cast<DType>(dtype)))
          unique.insert(configs::with_dtype(c, static_cast<DType>(dtype)));
  return {unique.begin(), unique.end()};
}

// Why each --config config is not measured at the selected steps that lack it, one note per
// reason rather than one per step: the steps of the other track, each known-bad rule
// (unsupported_combination) with the steps it forbids the config at, and the steps where it is
// valid but not in this binary (one step: the registry's closest built configs).
void note_unbuilt_configs(const std::map<KernelConfig, std::vector<int>>& unbuilt_steps,
                          const KernelRegistry& registry, std::vector<std::string>& notes) {
  for (const auto& [config, steps] : unbuilt_steps) {
    const std::string name = to_short_form(config);
    std::vector<int> other_track, not_built;
    std::vector<std::pair<std::string, std::vector<int>>> rules;  // in order of first step
    for (const int step : steps) {
      if ((configs::step_descriptor(step).track == Track::hopper) != is_hopper_config(config)) {
        other_track.push_back(step);
      } else if (const auto rule = unsupported_combination(step, config)) {
        const auto same = std::find_if(rules.begin(), rules.end(),
                                       [&](const auto& entry) { return entry.first == *rule; });
        if (same == rules.end())
          rules.emplace_back(*rule, std::vector<int>{step});
        else
          same->second.push_back(step);
      } else {
        not_built.push_back(step);
      }
    }
    if (!other_track.empty())
      notes.push_back(name + ": not run on " + configs::step_list_text(other_track) + ": " +
                      (is_hopper_config(config)
                           ? "a Hopper config (stages_N) runs on the Hopper steps " +
                                 std::to_string(kFirstHopperStep) + "+ only"
                           : "an Ampere config runs on the Ampere steps 1–" +
                                 std::to_string(kFirstHopperStep - 1) +
                                 " only (a Hopper step takes stages_N)"));
    for (const auto& [rule, rule_steps] : rules)
      notes.push_back(name + ": never built for " + configs::step_list_text(rule_steps) + ": " +
                      rule);
    if (not_built.size() == 1) {
      try {
        find_kernel(registry, not_built.front(), config);
      } catch (const KernelLookupError& error) {
        notes.push_back(error.what());
      }
    } else if (!not_built.empty()) {
      notes.push_back(name + ": not built into this binary for " +
                      configs::step_list_text(not_built) +
                      " (FLASHSCOPE_KERNEL_SET / FLASHSCOPE_STEPS; explorer --list shows what is)");
    }
  }
}

std::string dtype_list(const std::vector<int>& dtypes) {
  std::vector<std::string> names;
  for (const int dtype : dtypes)
    names.push_back(axis_spec(Axis::dtype).text(dtype));
  return text::join(names);
}

// A non-negative decimal integer filling all of `text`, or nullopt.
std::optional<int> parse_index(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0)
    return std::nullopt;
  return value;
}

// splitmix64's finaliser: spreads FNV's weak low bits before the modulo.
std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

DeviceSelection parse_device_selection(const std::string& text) {
  DeviceSelection selection;
  if (text::trim(text) == "all") {
    selection.all = true;
    return selection;
  }
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = text::trim(rest.substr(0, comma));
    const std::optional<int> index = parse_index(item);
    if (!index)
      throw std::invalid_argument(
          "--devices: '" + std::string(item) +
          "' is not a device index (expected all, or indices such as 0,2,3)");
    if (std::find(selection.indices.begin(), selection.indices.end(), *index) !=
        selection.indices.end())
      throw std::invalid_argument("--devices: device " + std::to_string(*index) +
                                  " is listed twice (each GPU runs one worker)");
    selection.indices.push_back(*index);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return selection;
}

PlanShard parse_plan_shard(const std::string& text) {
  const std::string_view view = text::trim(text);
  const std::size_t slash = view.find('/');
  const std::optional<int> index =
      slash == std::string_view::npos ? std::nullopt : parse_index(view.substr(0, slash));
  const std::optional<int> count =
      slash == std::string_view::npos ? std::nullopt : parse_index(view.substr(slash + 1));
  if (!index || !count)
    throw std::invalid_argument("--shard: '" + text +
                                "' is not K/N (shard K of N, K counted from 0, e.g. 0/4)");
  if (*count < 1) throw std::invalid_argument("--shard: '" + text + "': N must be at least 1");
  if (*index >= *count)
    throw std::invalid_argument("--shard: '" + text + "': K must be in 0.." +
                                std::to_string(*count - 1) +
                                " (0-based, as $SLURM_ARRAY_TASK_ID with --array=0-" +
                                std::to_string(*count - 1) + " or $JOB_COMPLETION_INDEX)");
  return {*index, *count};
}

std::string to_string(const PlanShard& shard) {
  return std::to_string(shard.index) + "/" + std::to_string(shard.count);
}

std::string plan_cell_key(const RowSubject& subject, const std::optional<KernelConfig>& config,
                          const Problem& problem) {
  return subject.text() + "|" + (config ? to_short_form(*config) : "") + "|" + problem_key(problem);
}

std::string plan_cell_key(const MeasurementItem& item) {
  return plan_cell_key(item.subject, item.config, item.problem);
}

int shard_of_cell(const std::string& cell_key, int count) {
  if (count < 1) throw std::invalid_argument("shard_of_cell: count must be at least 1");
  // FNV-1a, 64 bit: fixed constants, so the partition never changes between builds or hosts.
  std::uint64_t hash = 0xCBF29CE484222325ull;
  for (const char c : cell_key) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001B3ull;
  }
  return static_cast<int>(mix64(hash) % static_cast<std::uint64_t>(count));
}

std::vector<int> axis_values(const SweepOptions& options, Axis axis) {
  if (const auto found = options.axes.find(axis); found != options.axes.end()) return found->second;
  const AxisSpec& spec = axis_spec(axis);
  return spec.sweep_default ? spec.sweep_default() : std::vector<int>{};
}

std::vector<std::string> sweep_option_problems(const SweepOptions& options) {
  const auto shortest = [](double value) {
    std::ostringstream text;
    text << value;
    return text.str();
  };
  std::vector<std::string> problems;
  const auto fail = [&problems](const std::string& message) { problems.push_back(message); };
  if (options.configs.empty() && options.set_key != "prog" && options.set_key != "built") {
    try {
      configs::select(options.set_key);
    } catch (const std::invalid_argument& error) {  // names the valid keys
      fail(std::string("--set: ") + error.what());
    }
  }
  for (const std::string& problem : axis_value_problems(options.axes))
    fail(problem);
  const measurement::InterleavedSettings& timing = options.interleaved;
  const measurement::StoppingRule& stopping = timing.stopping;
  if (!(stopping.target_relative_width > 0))
    fail("--ci-target: " + shortest(stopping.target_relative_width * 100) +
         " must be a positive width in percent of the median (e.g. 1)");
  // Six rounds are the fewest with a 95 % order-statistic interval of the median.
  if (stopping.min_rounds < 6)
    fail("--min-rounds: " + std::to_string(stopping.min_rounds) +
         " is below 6, the fewest rounds with a 95 % interval");
  if (stopping.max_rounds < stopping.min_rounds)
    fail("--max-rounds: " + std::to_string(stopping.max_rounds) + " is below --min-rounds " +
         std::to_string(stopping.min_rounds));
  if (!(stopping.max_seconds > 0))
    fail("--cell-seconds: " + shortest(stopping.max_seconds) +
         " must be a positive number of seconds");
  if (!(timing.batch_target_ms > 0))
    fail("--batch-ms: " + shortest(timing.batch_target_ms) +
         " must be a positive number of milliseconds");
  if (!(timing.gap_us >= 0))
    fail("--gap-us: " + shortest(timing.gap_us) +
         " must be 0 or a positive number of microseconds");
  if (timing.gap_us > 0 && timing.pattern != measurement::LaunchPattern::gapped)
    fail("--gap-us: a gap between launches needs --launch-pattern gapped");
  if (options.metric_runs < 1)
    fail("--metric-runs: " + std::to_string(options.metric_runs) +
         " is below 1: at least one profiled launch is needed");
  if (options.device < 0) fail("--device: " + std::to_string(options.device) + " is negative");
  for (const int index : options.devices.indices)
    if (index < 0) fail("--devices: " + std::to_string(index) + " is negative");
  if (options.shard && (options.shard->count < 1 || options.shard->index < 0 ||
                        options.shard->index >= options.shard->count))
    fail("--shard: " + to_string(*options.shard) + " is not K/N with 0 <= K < N");
  if (!(options.timeout_s > 0))
    fail("--timeout: " + shortest(options.timeout_s) + " must be a positive number of seconds");
  if (options.run_id.find_first_of(",\"\n\r") != std::string::npos)
    fail("--run-id: '" + options.run_id + "' may not hold commas, quotes or line breaks");
  if (options.locked_sm_clock_mhz && *options.locked_sm_clock_mhz <= 0)
    fail("--locked-sm-clock: " + std::to_string(*options.locked_sm_clock_mhz) +
         " is not a clock in MHz");
  return problems;
}

void validate_sweep_options(const SweepOptions& options) {
  const std::vector<std::string> problems = sweep_option_problems(options);
  if (problems.empty()) return;
  std::string message;
  for (const std::string& problem : problems)
    message += (message.empty() ? "" : "\n") + problem;
  throw std::invalid_argument(message);
}

std::vector<int> resolve_sweep_devices(const SweepOptions& options, int device_count) {
  std::vector<int> devices;
  if (options.devices.all) {
    for (int i = 0; i < device_count; ++i)
      devices.push_back(i);
    return devices;
  }
  devices =
      options.devices.indices.empty() ? std::vector<int>{options.device} : options.devices.indices;
  for (const int index : devices)
    if (index < 0 || index >= device_count)
      throw std::invalid_argument(
          std::string(options.devices.indices.empty() ? "--device" : "--devices") +
          ": CUDA device " + std::to_string(index) + " does not exist; this machine has " +
          std::to_string(device_count) + " (indices 0.." + std::to_string(device_count - 1) +
          ", after CUDA_VISIBLE_DEVICES)");
  return devices;
}

std::vector<std::string> extra_metric_columns(const SweepOptions& options) {
  if (!options.collect_metrics) return {};
  const std::vector<std::string>& defaults = default_metrics();
  std::vector<std::string> extras;
  for (const std::string& metric : options.extra_metrics)
    if (std::find(defaults.begin(), defaults.end(), metric) == defaults.end() &&
        std::find(extras.begin(), extras.end(), metric) == extras.end())
      extras.push_back(metric);
  return extras;
}

std::vector<std::string> sweep_metric_names(const SweepOptions& options) {
  if (!options.collect_metrics) return {};
  std::vector<std::string> names = default_metrics();
  for (const std::string& metric : extra_metric_columns(options))
    names.push_back(metric);
  return names;
}

std::string MeasurementItem::label() const {
  std::string text = subject.text();
  if (config) text += " " + to_short_form(*config);
  text += " " + problem_label(problem) + " B=" + std::to_string(problem.batch);
  if (reference_pass > 1) text += " (again, after the kernels)";
  return text;
}

double SweepUnit::work_estimate() const {
  double flops = 0;
  for (const MeasurementItem& item : items)
    flops += matmul_flops(item.problem);  // half for a causal item
  return flops;
}

std::size_t SweepPlan::item_count() const {
  std::size_t count = 0;
  for (const SweepUnit& unit : units)
    count += unit.items.size();
  return count;
}

std::size_t SweepPlan::recorded_count() const {
  std::size_t count = 0;
  for (const SweepUnit& unit : units)
    for (const MeasurementItem& item : unit.items)
      count += item.recorded;
  return count;
}

SweepPlan plan_sweep(const SweepOptions& options, const KernelRegistry& registry,
                     const std::vector<std::string>& built_baselines) {
  validate_sweep_options(options);
  SweepPlan plan;
  // --config measures its configs in their own dtypes and head dimensions.
  AxisValues axes = options.axes;
  if (!options.configs.empty()) {
    std::set<int> dtypes, d_heads;
    for (const KernelConfig& c : options.configs) {
      dtypes.insert(static_cast<int>(c.dtype));
      d_heads.insert(c.d_head);
    }
    axes[Axis::dtype].assign(dtypes.begin(), dtypes.end());
    axes[Axis::d_head].assign(d_heads.begin(), d_heads.end());
  }
  const std::vector<Problem> problems = expand_problems(axes);

  // A worker makes the inputs and both §1.4 references of a problem once and measures every
  // reference and kernel of it on them: a unit per problem. A fault costs only its own row: the
  // parent restarts a worker at the next item. The references come first, so every kernel row can
  // be paired with them as it arrives, and (repeat_baselines) again after the kernels: the two
  // passes bracket the kernels and bound how far clocks drifted meanwhile.
  std::vector<RowSubject> baselines;
  for (const std::string& name : options.baselines) {
    const auto baseline = baseline_from_key(name);
    if (!baseline) throw std::invalid_argument("reference '" + name + "' is not fa2 or cudnn");
    if (std::find(built_baselines.begin(), built_baselines.end(), name) == built_baselines.end())
      plan.notes.push_back("reference '" + name + "' is not built into this binary; no " + name +
                           " rows");
    else
      baselines.push_back(RowSubject::baseline(*baseline));
  }
  std::vector<std::pair<int, std::vector<const KernelEntry*>>> kernels_by_step;
  std::map<KernelConfig, std::vector<int>> unbuilt_steps;  // of --config's configs
  const std::vector<int> steps = options.steps.empty() ? registry.steps() : options.steps;
  for (const int step : steps) {
    if (registry.entries_of_step(step).empty()) {
      plan.notes.push_back("step " + step_name(step) +
                           ": no kernel of this step is built into this binary "
                           "(FLASHSCOPE_STEPS / FLASHSCOPE_KERNEL_SET)");
      continue;
    }
    const std::vector<KernelConfig> selected = selected_configs(options, step, registry);
    // No config of the step in any requested dtype it runs (--dtypes e4m3 on a 16-bit step): the
    // dtype axis' sentence, naming the steps that run it. Where the step runs some requested
    // dtype, the problems of the others are refused below like any axis' value, and --config's
    // configs say it themselves (note_unbuilt_configs, through unsupported_combination).
    const StepDescriptor& descriptor = configs::step_descriptor(step);
    if (selected.empty() && options.configs.empty())
      for (const int dtype : axis_values(options, Axis::dtype)) {
        Problem problem = configs::problem_at_d_head(*descriptor.d_heads.begin());
        problem.dtype = static_cast<DType>(dtype);
        if (!descriptor.dtypes.contains(problem.dtype))
          plan.notes.push_back(*configs::step_refusal_message(step, problem));
      }
    std::vector<const KernelEntry*> built;
    std::size_t not_built = 0;
    for (const KernelConfig& c : selected) {
      if (const KernelEntry* entry = registry.try_find(step, c)) {
        built.push_back(entry);
        continue;
      }
      ++not_built;
      if (!options.configs.empty()) unbuilt_steps[c].push_back(step);
    }
    if (not_built > 0 && options.configs.empty())
      plan.notes.push_back("step " + step_name(step) + ": " + std::to_string(built.size()) +
                           " of " + std::to_string(built.size() + not_built) + " configs of set '" +
                           options.set_key + "' (" + dtype_list(axis_values(options, Axis::dtype)) +
                           ") are built; the other " + std::to_string(not_built) +
                           " are not in this binary (FLASHSCOPE_KERNEL_SET)");
    if (!built.empty()) kernels_by_step.emplace_back(step, std::move(built));
  }
  note_unbuilt_configs(unbuilt_steps, registry, plan.notes);

  if (kernels_by_step.empty()) {
    std::string message = "nothing to measure: the options select no built kernel";
    for (const std::string& note : plan.notes)
      message += "\n  " + note;
    throw std::invalid_argument(message);
  }

  // Which problems each kernel runs: launch validation's GPU-free rules (the step's axes, the
  // tiles against N, static head counts). A kernel is only asked about problems of its own dtype
  // and d_head; each distinct refusal becomes one note per step.
  std::map<std::pair<int, std::string>, std::size_t> refusals;
  std::map<std::string, std::size_t> baseline_refusals;  // reason -> problems
  std::size_t other_shards = 0;
  for (const Problem& problem : problems) {
    SweepUnit unit{problem_label(problem), {}};
    std::vector<MeasurementItem> kernels_here;
    for (const auto& [step, built] : kernels_by_step) {
      // The step's descriptor first (its d_heads, mask, grouping, pass): one note for the step.
      if (options.configs.empty())
        if (auto reason = configs::step_refusal_message(step, problem)) {
          ++refusals[{step, *reason}];
          continue;
        }
      // The configs that stand for the step (its progression config at the problem's d_head)
      // become the config the step chooses for this problem (StepDescriptor::problem_config, step
      // 32), so the row names the kernel that ran; a chosen config measured anyway (a variant)
      // is measured once.
      const bool by_problem = options.configs.empty() && options.set_key.starts_with("prog") &&
                              configs::step_descriptor(step).problem_config != nullptr;
      for (const KernelEntry* listed : built) {
        if (listed->config.dtype != problem.dtype || listed->config.d_head != problem.d_head)
          continue;
        const KernelEntry* entry = listed;
        if (by_problem &&
            listed->config == configs::with_dtype(configs::headline_config(step, problem.d_head),
                                                  problem.dtype)) {
          const KernelConfig chosen = configs::config_for_problem(step, listed->config, problem);
          entry = registry.try_find(step, chosen);
          if (entry == nullptr) {
            ++refusals[{step, "the step runs such problems with " + to_short_form(chosen) +
                                  ", which is not in this binary (FLASHSCOPE_KERNEL_SET)"}];
            continue;
          }
        }
        const auto same = [&](const MeasurementItem& item) {
          return item.subject == RowSubject::kernel(step) && item.config == entry->config;
        };
        if (std::any_of(kernels_here.begin(), kernels_here.end(), same)) continue;
        if (auto reason = launch_refusal(*entry, problem)) {
          ++refusals[{step, *reason}];
          continue;
        }
        kernels_here.push_back({RowSubject::kernel(step), entry->config, problem});
      }
    }
    // A problem no selected kernel runs gets no references either: they would be nobody's
    // baseline.
    if (kernels_here.empty()) continue;
    const auto baseline_item = [&](const RowSubject& baseline, int pass) {
      MeasurementItem item{baseline, std::nullopt, problem};
      item.reference_pass = pass;
      return item;
    };
    std::vector<RowSubject> baselines_of_problem;
    for (const RowSubject& baseline : baselines) {
      if (auto reason = baseline_plan_refusal(*baseline.which_baseline(), problem)) {
        ++baseline_refusals[*reason];
        continue;
      }
      baselines_of_problem.push_back(baseline);
    }
    std::vector<MeasurementItem> baselines_here;
    for (const RowSubject& baseline : baselines_of_problem)
      baselines_here.push_back(baseline_item(baseline, 1));
    std::vector<MeasurementItem> baselines_after;
    if (options.repeat_baselines)
      for (const RowSubject& baseline : baselines_of_problem)
        baselines_after.push_back(baseline_item(baseline, 2));
    if (options.shard) {
      const auto owned = [&](const MeasurementItem& item) {
        return shard_of_cell(plan_cell_key(item), options.shard->count) == options.shard->index;
      };
      const std::size_t before =
          kernels_here.size() + baselines_here.size() + baselines_after.size();
      std::erase_if(kernels_here, [&](const MeasurementItem& item) { return !owned(item); });
      // Both passes of a reference are one cell: the same owner writes both rows.
      bool any_baseline_owned = false;
      for (std::vector<MeasurementItem>* list : {&baselines_here, &baselines_after})
        for (MeasurementItem& item : *list) {
          item.recorded = owned(item);
          any_baseline_owned = any_baseline_owned || item.recorded;
        }
      // Baselines are measured only where this shard has kernels to compare with them.
      if (kernels_here.empty())
        for (std::vector<MeasurementItem>* list : {&baselines_here, &baselines_after})
          std::erase_if(*list, [](const MeasurementItem& item) { return !item.recorded; });
      std::size_t kept = kernels_here.size();
      for (const std::vector<MeasurementItem>* list : {&baselines_here, &baselines_after})
        for (const MeasurementItem& item : *list)
          kept += item.recorded;
      other_shards += before - kept;
      if (kernels_here.empty() && !any_baseline_owned) continue;
    }
    for (MeasurementItem& item : baselines_here)
      unit.items.push_back(std::move(item));
    for (MeasurementItem& item : kernels_here)
      unit.items.push_back(std::move(item));
    for (MeasurementItem& item : baselines_after)
      unit.items.push_back(std::move(item));
    if (!unit.items.empty()) plan.units.push_back(std::move(unit));
  }
  for (const auto& [key, count] : refusals)
    plan.notes.push_back("step " + step_name(key.first) + ": " + std::to_string(count) +
                         (count == 1 ? " problem" : " problems") + " not measured: " + key.second);
  for (const auto& [reason, count] : baseline_refusals)
    plan.notes.push_back(reason + " (" + std::to_string(count) +
                         (count == 1 ? " problem)" : " problems)"));
  if (plan.units.empty() && !options.shard) {
    std::string message =
        "nothing to measure: no selected kernel runs the problems the options describe";
    for (const std::string& note : plan.notes)
      message += "\n  " + note;
    throw std::invalid_argument(message);
  }
  if (options.shard)
    plan.notes.push_back("shard " + to_string(*options.shard) + ": " +
                         std::to_string(plan.recorded_count()) + " of " +
                         std::to_string(plan.recorded_count() + other_shards) +
                         " plan cells are this shard's; the other shards own the rest");
  return plan;
}

std::optional<std::string> baseline_plan_refusal(Baseline baseline, const Problem& problem) {
  if (baseline == Baseline::fa2 && problem.dtype == DType::E4M3)
    return std::string(
        "reference 'fa2': no rows for e4m3 problems: FlashAttention-2 has no FP8 "
        "forward (fp8-track.md §3; cuDNN's FP8 attention is the e4m3 reference)");
  return std::nullopt;
}

std::uint64_t input_seed_for(std::uint64_t sweep_seed, const Problem& shape) {
  // splitmix64 over the fields: distinct shapes get unrelated inputs, equal ones identical inputs.
  std::uint64_t x = sweep_seed;
  const auto mix = [&x](std::uint64_t value) {
    x += 0x9E3779B97F4A7C15ull + value;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    x = z ^ (z >> 31);
  };
  mix(static_cast<std::uint64_t>(shape.dtype));
  mix(static_cast<std::uint64_t>(shape.batch));
  mix(static_cast<std::uint64_t>(shape.seq_len));
  mix(static_cast<std::uint64_t>(shape.heads));
  mix(static_cast<std::uint64_t>(shape.d_head));
  if (shape.grouped()) mix(static_cast<std::uint64_t>(shape.heads_kv));
  // fill_random_normal derives Q, K, V seeds as 3s, 3s+1, 3s+2: keep 3s from overflowing.
  return x % (UINT64_MAX / 3);
}

}  // namespace flashscope
