#include "profiling/sweep/sweep_plan.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "configs/config_sets.hpp"
#include "kernels/common/launch_validation.hpp"
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
  // A set names a shape and feature list; it is measured in each requested dtype.
  std::set<KernelConfig> unique;
  for (const KernelConfig& c : base)
    if (std::find(options.d_heads.begin(), options.d_heads.end(), c.d_head) !=
        options.d_heads.end())
      for (const DType dtype : options.dtypes)
        unique.insert(configs::with_dtype(c, dtype));
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
        registry.find(not_built.front(), config);
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

// The references (kernels/common/reference_gpu.cu) take d_head <= 256, and the kernels' tiles are
// d_head / 64 sub-tiles of 64 columns.
constexpr int kMaxSweepDHead = 256;

std::string dtype_list(const std::vector<DType>& dtypes) {
  std::string text;
  for (const DType dtype : dtypes)
    text += (text.empty() ? "" : ",") + std::string(dtype_lower_name(dtype));
  return text;
}

// A non-negative decimal integer filling all of `text`, or nullopt.
std::optional<int> parse_index(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0)
    return std::nullopt;
  return value;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  return text;
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
  if (trimmed(text) == "all") {
    selection.all = true;
    return selection;
  }
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trimmed(rest.substr(0, comma));
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
  const std::string_view view = trimmed(text);
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
                          std::optional<DType> dtype, const AttentionShape& shape) {
  return subject.text() + "|" + (config ? to_short_form(*config) : "") + "|" +
         (dtype ? std::string(dtype_lower_name(*dtype)) : "") + "|" + std::to_string(shape.d_head) +
         "|" + std::to_string(shape.batch) + "|" + std::to_string(shape.heads) + "|" +
         std::to_string(shape.seq_len) + (shape.causal ? "|causal" : "");
}

std::string plan_cell_key(const MeasurementItem& item) {
  return plan_cell_key(item.subject, item.config, item.dtype, item.shape);
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

const std::vector<int>& seed_seq_lens() {
  static const std::vector<int> lengths = {512, 1024, 2048, 4096, 8192, 16384};
  return lengths;
}

int seed_batch_for(int seq_len) {
  if (seq_len <= 0) return 1;
  return std::clamp(65536 / seq_len, 1, 16);
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
  if (options.seq_lens.empty()) fail("--seq-lens: at least one sequence length is needed");
  for (const int n : options.seq_lens)
    if (n <= 0) fail("--seq-lens: " + std::to_string(n) + " is not a positive length");
  if (options.dtypes.empty() && options.configs.empty())
    fail("--dtypes: at least one dtype is needed");
  if (options.d_heads.empty() && options.configs.empty())
    fail("--d-heads: at least one head dimension is needed");
  for (const int d_head : options.d_heads)
    if (d_head <= 0 || d_head % 64 != 0 || d_head > kMaxSweepDHead)
      fail("--d-heads: " + std::to_string(d_head) +
           " is not a head dimension the kernels and references run: a multiple of 64 up to " +
           std::to_string(kMaxSweepDHead) + " (64, 128, 256)");
  if (options.causal.empty()) fail("--causal: at least one mask value is needed (0, 1 or 0,1)");
  for (const int mask : options.causal)
    if (mask != 0 && mask != 1)
      fail("--causal: " + std::to_string(mask) +
           " is not a mask value: 0 (no mask) or 1 (causal), e.g. --causal 0,1");
  if (options.batch && *options.batch <= 0)
    fail("--batch: " + std::to_string(*options.batch) + " is not a positive batch size");
  if (options.heads <= 0) fail("--heads: " + std::to_string(options.heads) + " is not positive");
  if (options.timing.timed_runs < 1)
    fail("--runs: " + std::to_string(options.timing.timed_runs) +
         " is below 1: at least one timed run is needed");
  if (options.timing.min_timed_runs < 1)
    fail("--min-runs: " + std::to_string(options.timing.min_timed_runs) +
         " is below 1: at least one timed run is needed");
  if (options.timing.warmup_runs < 1)
    fail("--warmup: " + std::to_string(options.timing.warmup_runs) +
         " is below 1: at least 1 is needed (the first warm-up launch sizes the timed batch)");
  if (!(options.timing.target_ms >= 0))
    fail("--target-ms: " + shortest(options.timing.target_ms) +
         " must be 0 (always --runs) or a positive number of milliseconds");
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
  text += " ";
  text += config ? to_short_form(*config) : std::string(dtype_name(dtype));
  text += " B=" + std::to_string(shape.batch) + " H=" + std::to_string(shape.heads) +
          " N=" + std::to_string(shape.seq_len);
  if (!config && shape.d_head != 128) text += " d=" + std::to_string(shape.d_head);
  if (shape.causal) text += " causal";
  if (reference_pass > 1) text += " (again, after the kernels)";
  return text;
}

double SweepUnit::work_estimate() const {
  double flops = 0;
  for (const MeasurementItem& item : items)
    flops += matmul_flops(item.shape);  // half for a causal item
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
  const std::vector<DType> dtypes =
      options.configs.empty() ? options.dtypes : dtypes_of(options.configs);
  const std::vector<int> d_heads =
      options.configs.empty() ? options.d_heads : d_heads_of(options.configs);
  const auto shape_for = [&](int seq_len, int d_head, bool causal) {
    AttentionShape shape;
    shape.batch = options.batch ? *options.batch : seed_batch_for(seq_len);
    shape.seq_len = seq_len;
    shape.heads = options.heads;
    shape.d_head = d_head;
    shape.causal = causal;
    return shape;
  };
  const bool wants_causal =
      std::find(options.causal.begin(), options.causal.end(), 1) != options.causal.end();

  // A worker makes the inputs and both §1.4 references of a (dtype, N) once and measures every
  // reference and kernel of that shape on them: a unit per shape. A fault costs only its own
  // row: the parent restarts a worker at the next item. The references come first, so every
  // kernel row can be paired with them as it arrives, and (repeat_baselines) again after the
  // kernels: the two passes bracket the kernels and bound how far clocks drifted meanwhile.
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
  std::vector<std::pair<int, std::vector<KernelConfig>>> kernels_by_step;
  std::map<KernelConfig, std::vector<int>> unbuilt_steps;  // of --config's configs
  const std::vector<int> steps = options.steps.empty() ? registry.steps() : options.steps;
  for (const int step : steps) {
    if (registry.entries_of_step(step).empty()) {
      plan.notes.push_back("step " + std::to_string(step) +
                           ": no kernel of this step is built into this binary "
                           "(FLASHSCOPE_STEPS / FLASHSCOPE_KERNEL_SET)");
      continue;
    }
    if (options.configs.empty())
      for (const int d_head : options.d_heads)
        if (!configs::step_descriptor(step).d_heads.contains(d_head))
          plan.notes.push_back("step " + std::to_string(step) + ": not measured at d_head " +
                               std::to_string(d_head) + ": " +
                               unsupported_d_head_message(configs::step_descriptor(step), d_head));
    std::vector<KernelConfig> built;
    std::size_t not_built = 0;
    bool lacks_causal = false;
    for (const KernelConfig& c : selected_configs(options, step, registry)) {
      if (const KernelEntry* entry = registry.try_find(step, c)) {
        built.push_back(c);
        lacks_causal = lacks_causal || !entry->supports_causal;
        continue;
      }
      ++not_built;
      if (!options.configs.empty()) unbuilt_steps[c].push_back(step);
    }
    if (not_built > 0 && options.configs.empty())
      plan.notes.push_back("step " + std::to_string(step) + ": " + std::to_string(built.size()) +
                           " of " + std::to_string(built.size() + not_built) + " configs of set '" +
                           options.set_key + "' (" + dtype_list(options.dtypes) +
                           ") are built; the other " + std::to_string(not_built) +
                           " are not in this binary (FLASHSCOPE_KERNEL_SET)");
    if (wants_causal && lacks_causal)
      plan.notes.push_back("step " + std::to_string(step) +
                           ": not measured causal: " + unsupported_causal_message(step));
    if (!built.empty()) kernels_by_step.emplace_back(step, std::move(built));
  }
  note_unbuilt_configs(unbuilt_steps, registry, plan.notes);
  // Whether `step`'s built kernel `c` runs the workload `causal` (every kernel runs the
  // unmasked one).
  const auto runs_mask = [&registry](int step, const KernelConfig& c, bool causal) {
    const KernelEntry* entry = registry.try_find(step, c);
    return entry && (!causal || entry->supports_causal);
  };

  if (kernels_by_step.empty()) {
    std::string message = "nothing to measure: the options select no built kernel";
    for (const std::string& note : plan.notes)
      message += "\n  " + note;
    throw std::invalid_argument(message);
  }

  // A head dimension no selected kernel runs gets no units: its references would have nothing
  // to be the baseline of.
  std::vector<int> measured_d_heads;
  for (const int d_head : d_heads) {
    bool any = false;
    for (const auto& [step, built] : kernels_by_step)
      for (const KernelConfig& c : built)
        any = any || c.d_head == d_head;
    if (any)
      measured_d_heads.push_back(d_head);
    else
      plan.notes.push_back("d_head " + std::to_string(d_head) +
                           ": no selected kernel runs it; no rows (steps declaring it: " +
                           configs::step_list_text(configs::steps_supporting_d_head(d_head)) + ")");
  }

  // A mask value no selected kernel runs gets no units either (only the causal one can lack a
  // kernel: every step runs the unmasked problem).
  std::vector<bool> measured_masks;
  for (const int mask : options.causal) {
    bool any = false;
    for (const auto& [step, built] : kernels_by_step)
      for (const KernelConfig& c : built)
        any = any || runs_mask(step, c, mask == 1);
    if (any)
      measured_masks.push_back(mask == 1);
    else
      plan.notes.push_back(
          "causal: no selected kernel has the causal mask; no causal rows "
          "(steps with it: " +
          configs::step_list_text(configs::steps_supporting_causal()) + ")");
  }

  if (measured_masks.empty()) {  // --causal 1 alone, and no selected step has the mask
    std::string message = "nothing to measure: no selected kernel runs the workloads of --causal";
    for (const std::string& note : plan.notes)
      message += "\n  " + note;
    throw std::invalid_argument(message);
  }

  // One unit per (dtype, d_head, mask, N): its references, every step's configs at that d_head
  // (that run the mask), the references again, on one input set.
  std::size_t other_shards = 0;
  for (const DType dtype : dtypes)
    for (const int d_head : measured_d_heads)
      for (const bool causal : measured_masks)
        for (const int seq_len : options.seq_lens) {
          SweepUnit unit{std::string(dtype_lower_name(dtype)) +
                             (d_head == 128 ? "" : " d=" + std::to_string(d_head)) +
                             (causal ? " causal" : "") + " N=" + std::to_string(seq_len),
                         {}};
          const auto baseline_item = [&](const RowSubject& baseline, int pass) {
            MeasurementItem item{baseline, std::nullopt, dtype, shape_for(seq_len, d_head, causal)};
            item.reference_pass = pass;
            return item;
          };
          std::vector<MeasurementItem> kernels_here;
          for (const auto& [step, built] : kernels_by_step)
            for (const KernelConfig& c : built)
              if (c.dtype == dtype && c.d_head == d_head && runs_mask(step, c, causal))
                kernels_here.push_back(
                    {RowSubject::kernel(step), c, dtype, shape_for(seq_len, c.d_head, causal)});
          // A (dtype, d_head, mask) no selected kernel runs (a causal cell whose steps all lack
          // the mask) gets no references either: they would be nobody's baseline.
          if (causal && kernels_here.empty()) continue;
          std::vector<MeasurementItem> baselines_here;
          for (const RowSubject& baseline : baselines)
            baselines_here.push_back(baseline_item(baseline, 1));
          std::vector<MeasurementItem> baselines_after;
          if (options.repeat_baselines && !kernels_here.empty())
            for (const RowSubject& baseline : baselines)
              baselines_after.push_back(baseline_item(baseline, 2));
          if (options.shard) {
            const auto owned = [&](const MeasurementItem& item) {
              return shard_of_cell(plan_cell_key(item), options.shard->count) ==
                     options.shard->index;
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
  if (options.shard)
    plan.notes.push_back("shard " + to_string(*options.shard) + ": " +
                         std::to_string(plan.recorded_count()) + " of " +
                         std::to_string(plan.recorded_count() + other_shards) +
                         " plan cells are this shard's; the other shards own the rest");
  return plan;
}

std::uint64_t input_seed_for(std::uint64_t sweep_seed, DType dtype, const AttentionShape& shape) {
  // splitmix64 over the fields: distinct shapes get unrelated inputs, equal ones identical inputs.
  std::uint64_t x = sweep_seed;
  const auto mix = [&x](std::uint64_t value) {
    x += 0x9E3779B97F4A7C15ull + value;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    x = z ^ (z >> 31);
  };
  mix(static_cast<std::uint64_t>(dtype));
  mix(static_cast<std::uint64_t>(shape.batch));
  mix(static_cast<std::uint64_t>(shape.seq_len));
  mix(static_cast<std::uint64_t>(shape.heads));
  mix(static_cast<std::uint64_t>(shape.d_head));
  // fill_random_normal derives Q, K, V seeds as 3s, 3s+1, 3s+2: keep 3s from overflowing.
  return x % (UINT64_MAX / 3);
}

}  // namespace flashscope
