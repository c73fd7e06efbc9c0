// What a headless sweep measures: its options and the plan they expand to. The plan is a pure
// function of the options, the kernels built into the binary and the references built into it, so
// the parent process and every worker it starts compute the same plan and agree on unit and item
// indices without exchanging anything but the options (docs/profiling.md, "Fault isolation").
// `--shard K/N` keeps the cells whose stable hash falls in shard K, so N hosts running the same
// selection cover it exactly once (docs/profiling.md, "Several GPUs and hosts").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/config.hpp"
#include "kernels/common/reference.hpp"
#include "kernels/common/registry.hpp"
#include "profiling/results/results.hpp"
#include "profiling/timing.hpp"

namespace flashscope {

// Spec §1.2: the seed's sequence lengths; batch(N) = min(16, 65536 / N) reproduces its batch table
// (16, 16, 16, 16, 8, 4) and extends it to other lengths.
const std::vector<int>& seed_seq_lens();
int seed_batch_for(int seq_len);

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
  std::vector<int> seq_lens = seed_seq_lens();
  std::vector<DType> dtypes = {DType::FP16, DType::BF16};
  // Head dimensions: each (step, config) is measured at its own d_head only, the references at
  // every d_head listed; a step whose descriptor lacks a listed d_head is skipped with a note.
  std::vector<int> d_heads = {128};
  // The mask axis (--causal): 0 measures the problem without a mask, 1 the causal one. Each
  // value is its own workload (units, plan cells, pct_* baselines); a step without the mask is
  // skipped at 1 with a note naming the steps that have it.
  std::vector<int> causal = {0};
  std::optional<int> batch;  // overrides seed_batch_for
  int heads = 16;
  TimingSettings timing;
  bool collect_metrics = true;
  std::vector<std::string> extra_metrics;  // on top of default_metrics()
  // Profiled launches per row; each metric is their median (counters such as the L2 hit rate
  // vary by about a point from launch to launch).
  int metric_runs = 3;
  // The speed baselines measured at each (dtype, N) (profiling/baselines), `--reference` on the
  // command line.
  std::vector<std::string> baselines = {"fa2", "cudnn"};
  // Measure every baseline a second time after the kernels of its (dtype, N), so the drift of
  // clocks and temperature over that stretch of the sweep shows in the data (reference_pass 2).
  bool repeat_baselines = true;
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

struct MeasurementItem {
  RowSubject subject;                  // a step's kernel or a baseline
  std::optional<KernelConfig> config;  // kernels only
  DType dtype = DType::FP16;
  AttentionShape shape;
  // False for a reference measured only as the baseline of this shard's pct_* columns: another
  // shard owns its row, so it is not written (each plan cell is written by exactly one shard).
  bool recorded = true;
  int reference_pass = 0;  // references: 1 before the shape's kernels, 2 after them; kernels: 0
  bool is_baseline() const { return !config.has_value(); }
  // "7 (FP16, 128, ...): ... B=16 H=16 N=4096" for messages; a reference at a d_head other
  // than 128 adds " d=64", a causal item " causal".
  std::string label() const;
};

// A plan cell's identity, the same text on every host and in every build:
// "step|config short form|dtype|d_head|batch|heads|seq_len", with "|causal" appended for the
// causal workload (config empty for references; non-causal keys, hence shards, are those of
// plans before the mask axis). Both passes of a reference are one cell: the same shard.
std::string plan_cell_key(const RowSubject& subject, const std::optional<KernelConfig>& config,
                          std::optional<DType> dtype, const AttentionShape& shape);
std::string plan_cell_key(const MeasurementItem& item);

// The shard (0..count-1) that owns a cell: a 64-bit hash of plan_cell_key, so a cell's shard
// depends on nothing else (not the plan order, not what else is built or selected).
int shard_of_cell(const std::string& cell_key, int count);

// The items one worker measures in a row on one input set: the references, every kernel, then the
// references again (reference_pass 2, with repeat_baselines), of one (dtype, d_head, mask, N).
// Units are what the parent hands out to devices; a fault ends the worker and the parent restarts
// the unit after the faulting item.
struct SweepUnit {
  // "fp16 N=4096"; "fp16 d=64 N=4096" at a d_head other than 128; "fp16 causal N=4096"
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

// The deterministic seed of one (dtype, N, batch, heads, d_head) input set: every step and
// reference of a sweep sees the same Q, K, V at a given shape, with and without the mask.
std::uint64_t input_seed_for(std::uint64_t sweep_seed, DType dtype, const AttentionShape& shape);

}  // namespace flashscope
