// What a headless sweep measures: its options and the plan they expand to. The plan is a pure
// function of the options, the kernels built into the binary and the references built into it;
// the parent process computes it once and hands it to each worker it starts as data
// (sweep_worker.hpp: format_worker_job), so both agree on unit and item indices
// (docs/profiling.md, "Fault isolation").
// `--shard K/N` keeps the cells whose stable hash falls in shard K, so N hosts running the same
// selection cover it exactly once (docs/profiling.md, "Several GPUs and hosts").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/config.hpp"
#include "kernels/common/problem.hpp"
#include "kernels/common/problem_axes.hpp"
#include "kernels/common/registry.hpp"
#include "profiling/results/results.hpp"
#include "profiling/measurement/interleaved.hpp"
#include "profiling/timing.hpp"

namespace flashscope {

// --devices: the GPUs a sweep runs on, one worker process each.
struct DeviceSelection {
  bool all = false;          // every device the CUDA runtime sees (after CUDA_VISIBLE_DEVICES)
  std::vector<int> indices;  // otherwise these, in the order given; empty: SweepOptions::device
  bool operator==(const DeviceSelection&) const = default;
};

// --shard K/N: this run measures shard K (0-based) of N.
struct PlanShard {
  int index = 0;
  int count = 1;
  bool operator==(const PlanShard&) const = default;
};

// Parse "all" or "0,2,3" / "K/N"; throw std::invalid_argument naming the option and the rule.
DeviceSelection parse_device_selection(const std::string& text);
PlanShard parse_plan_shard(const std::string& text);
std::string to_string(const PlanShard& shard);  // "K/N"

struct SweepOptions {
  // Which configs each step measures: "prog" (each step's own progression entry or picks),
  // "built" (every config built for the step), or a selection key of spec §5.4 ("prog_all",
  // "tune", "all", "B_r,B_c"), intersected with what is built for the step.
  std::string set_key = "prog";
  std::vector<KernelConfig> configs;  // --config: measured as written, instead of a set
  std::vector<int> steps;             // empty = every step built into the binary
  // The problems: the values chosen for each axis of the table (kernels/common/problem_axes.hpp),
  // as typed values in the order given; an axis without an entry takes its sweep default or is
  // derived from the others (batch from N, heads_kv = heads). Each problem is a unit of its own
  // (with its references and pct_* baselines); each (step, config) is measured on the problems of
  // its own dtype and d_head that its step runs, the others skipped with a note naming the rule.
  // With --config the dtypes and d_heads are the configs' own.
  AxisValues axes;
  // How a unit's kernels and references are timed: interleaved in rounds until their intervals
  // are narrow enough (docs/profiling.md, "Interleaved measurement and intervals").
  measurement::InterleavedSettings interleaved;
  // warm: back to back; cold: L2 evicted before every launch (the gapped pattern).
  CacheMode cache_mode = CacheMode::warm;
  bool collect_metrics = true;
  std::vector<std::string> extra_metrics;  // on top of default_metrics()
  // Profiled launches per row; each metric is their median (counters such as the L2 hit rate
  // vary by about a point from launch to launch).
  int metric_runs = 3;
  // The speed baselines measured at each (dtype, N) (profiling/baselines), `--reference` on the
  // command line.
  std::vector<std::string> baselines = {"fa2", "cudnn"};
  // Time every baseline twice in its unit's rounds (reference_pass 1 and 2): two contenders that
  // compute the same thing, whose difference shows the noise left after interleaving (an A/A
  // check). Off by default: interleaving already spreads the drift over every contender.
  bool repeat_baselines = false;
  // The SM clock the caller locked for this sweep (nvidia-smi -lgc), recorded in every row; the
  // sweep never changes clocks itself. Unset: clocks as the card sets them.
  std::optional<int> locked_sm_clock_mhz;
  int device = 0;           // the device a worker measures on (and the default of `devices`)
  DeviceSelection devices;  // the devices the parent spreads the plan over
  std::optional<PlanShard> shard;
  std::uint64_t seed = 0;  // input seed; the parent draws one when the user gives none
  // Names the sweep in every row (run_id); empty: the parent names it "<host> <UTC start>".
  // Sweeps that should read as one run (e.g. shards of one plan) can share a name.
  std::string run_id;
  double timeout_s = 300;  // per measurement; a worker silent for longer is killed
};

// Every problem of the options, each naming the option, its value and the rule; empty when
// they are valid.
std::vector<std::string> sweep_option_problems(const SweepOptions& options);
// Throws std::invalid_argument holding every problem (one per line).
void validate_sweep_options(const SweepOptions& options);

// The device indices a sweep runs on, given how many the machine has: `devices` resolved, else
// {device}. Throws std::invalid_argument naming a device that does not exist.
std::vector<int> resolve_sweep_devices(const SweepOptions& options, int device_count);

// Every metric a row collects: default_metrics(), then extra_metric_columns(); empty when
// metrics are off.
std::vector<std::string> sweep_metric_names(const SweepOptions& options);

// The --metrics names that get their own "metric:<name>" CSV column: those not among
// default_metrics() (which have named columns), without repeats; empty when metrics are off.
std::vector<std::string> extra_metric_columns(const SweepOptions& options);

// The values of `axis` a sweep of `options` covers, before --config narrows dtypes and d_heads:
// the given ones, else the axis' sweep default (empty for a derived axis without given values).
std::vector<int> axis_values(const SweepOptions& options, Axis axis);

struct MeasurementItem {
  RowSubject subject;                  // a step's kernel or a baseline
  std::optional<KernelConfig> config;  // kernels only
  Problem problem;
  // False for a reference measured only as the baseline of this shard's pct_* columns: another
  // shard owns its row, so it is not written (each plan cell is written by exactly one shard).
  bool recorded = true;
  int reference_pass = 0;  // references: 1 before the shape's kernels, 2 after them; kernels: 0
  bool is_baseline() const { return !config.has_value(); }
  // "7 (FP16, 128, ...): ... fp16 causal N=4096 B=16" for messages: the subject, the config, the
  // problem's label and the batch.
  std::string label() const;
};

// A plan cell's identity, the same text on every host and in every build:
// "step|config short form|" + problem_key (dtype|d_head|batch|heads|seq_len, then a tag for each
// axis off its plain value: "|kv=8", "|causal", "|backward"); config empty for references. The
// keys, hence shards, of problems that existed before an axis are unchanged by it. Both passes of
// a reference are one cell: the same shard.
std::string plan_cell_key(const RowSubject& subject, const std::optional<KernelConfig>& config,
                          const Problem& problem);
std::string plan_cell_key(const MeasurementItem& item);

// The shard (0..count-1) that owns a cell: a 64-bit hash of plan_cell_key, so a cell's shard
// depends on nothing else (not the plan order, not what else is built or selected).
int shard_of_cell(const std::string& cell_key, int count);

// The items one worker measures in a row on one input set: the references, every kernel, then the
// references again (reference_pass 2, with repeat_baselines), of one problem. The worker checks
// each item, then times them all interleaved.
// Units are what the parent hands out to devices; a fault ends the worker and the parent restarts
// the unit after the faulting item.
struct SweepUnit {
  // The problem's label: "fp16 N=4096", "fp16 d=64 N=4096", "bf16 H=32 kv=8 causal N=4096"
  std::string name;
  std::vector<MeasurementItem> items;
  double work_estimate() const;  // the items' matmul FLOP: hands out the big units first
};

struct SweepPlan {
  std::vector<SweepUnit> units;
  std::vector<std::string> notes;  // what was left out and why (printed to stderr)
  std::size_t item_count() const;
  std::size_t recorded_count() const;  // the rows the sweep writes
};

// Throws std::invalid_argument when the options select nothing to measure (for a shard: when the
// selection is empty; a shard that owns none of its cells gets an empty plan and a note).
SweepPlan plan_sweep(const SweepOptions& options, const KernelRegistry& registry,
                     const std::vector<std::string>& built_baselines);

// Why a reference has no row at a problem, decided when planning (the reference is not asked):
// FlashAttention-2 has no FP8 forward, so e4m3 problems have no fa2 row (fp8-track.md §3: its
// rows are absent, not zero). nullopt where the reference is planned and prepare() decides.
std::optional<std::string> baseline_plan_refusal(Baseline baseline, const Problem& problem);

// The deterministic seed of one problem's input set: every step and reference of a sweep sees the
// same Q, K, V at a given shape, with and without the mask. The K/V head count enters the
// derivation only for grouped problems, so multi-head problems keep the seeds of sweeps before
// the axis.
std::uint64_t input_seed_for(std::uint64_t sweep_seed, const Problem& problem);

}  // namespace flashscope
