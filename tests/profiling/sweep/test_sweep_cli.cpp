// The headless modes without a GPU: option parsing and its errors, the sweep plan (what a --set
// means for each step), the worker command line round trip, the check's kernel resolution, and
// what `explorer --csv` / `explorer check` do on a machine without a usable GPU.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "configs/config_sets.hpp"
#include "explorer/check_mode.hpp"
#include "explorer/sweep_mode.hpp"
#include "explorer/usage.hpp"
#include "configs/launch_validation.hpp"
#include "kernels/common/cuda_check.hpp"
#include "profiling/check.hpp"
#include "profiling/sweep/sweep_plan.hpp"
#include "profiling/sweep/sweep_worker.hpp"
#include "tests/profiling/sweep/scratch_files.hpp"

using namespace flashscope;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Parses `args` (without the program name) as the explorer's top level would.
SweepOptions parse_sweep(std::vector<std::string> args) {
  CLI::App app;
  cli::SweepCli sweep;
  cli::add_sweep_options(app, sweep);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 wants them reversed
  app.parse(reversed);
  return cli::sweep_options_from_cli(sweep);
}

std::string sweep_error(std::vector<std::string> args) {
  try {
    parse_sweep(std::move(args));
  } catch (const CLI::ParseError& error) {
    return std::string("CLI: ") + error.what();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(accepted)";
}

cudaError_t launch_nothing(const ForwardArgs&, cudaStream_t) {
  return cudaSuccess;
}

KernelEntry entry_for(int step, const KernelConfig& config) {
  KernelEntry entry;
  entry.step = step;
  entry.config = config;
  entry.launch = &launch_nothing;
  entry.display_name = std::to_string(step) + " " + to_short_form(config);
  return entry;
}

KernelConfig fp16(const KernelConfig& c) {
  return configs::with_dtype(c, DType::FP16);
}
KernelConfig bf16(const KernelConfig& c) {
  return configs::with_dtype(c, DType::BF16);
}

// Step 1: its progression config in both dtypes. Step 3: its progression config in fp16 only and
// one tune config. Step 8: the seed's A100 pick in fp16.
KernelRegistry synthetic_registry() {
  KernelRegistry registry;
  const std::vector<KernelConfig> progression = configs::progression();
  registry.add(entry_for(1, fp16(progression[0])));
  registry.add(entry_for(1, bf16(progression[0])));
  registry.add(entry_for(3, fp16(progression[2])));
  registry.add(entry_for(3, fp16(configs::tune_set().back())));
  registry.add(entry_for(8, fp16(*configs::step_picks(8).seed_a100)));
  return registry;
}

std::size_t count_items(const SweepUnit& unit, DType dtype) {
  std::size_t count = 0;
  for (const MeasurementItem& item : unit.items)
    count += item.problem.dtype == dtype;
  return count;
}

struct ProcessResult {
  int exit_code = -1;
  std::string output;
};

// Runs the explorer with every GPU hidden, capturing stdout (and stderr when `with_stderr`).
ProcessResult run_explorer_without_gpu(const std::string& arguments, bool with_stderr) {
  const std::string command = "CUDA_VISIBLE_DEVICES=-1 '" FLASHSCOPE_EXPLORER_PATH "' " +
                              arguments + (with_stderr ? " 2>&1" : " 2>/dev/null");
  ProcessResult result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  std::size_t count = 0;
  while ((count = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    result.output.append(buffer, count);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace

TEST_CASE("sweep defaults follow the seed's benchmark shapes") {
  const SweepOptions options = parse_sweep({"--csv"});
  CHECK(options.set_key == "prog");
  // No axis given: each takes its sweep default or is derived (batch from N, heads_kv = heads).
  CHECK(options.axes.empty());
  CHECK(axis_values(options, Axis::seq_len) ==
        std::vector<int>{512, 1024, 2048, 4096, 8192, 16384});
  CHECK(axis_values(options, Axis::dtype) ==
        std::vector<int>{static_cast<int>(DType::FP16), static_cast<int>(DType::BF16)});
  CHECK(axis_values(options, Axis::heads) == std::vector<int>{16});
  CHECK(axis_values(options, Axis::d_head) == std::vector<int>{128});
  CHECK(axis_values(options, Axis::causal) == std::vector<int>{0});
  CHECK(axis_values(options, Axis::batch).empty());
  CHECK(axis_values(options, Axis::heads_kv).empty());
  // Interleaved rounds until every interval is 1 % wide, 10 to 400 rounds, 2 s a problem, each
  // contender's batch captured into a CUDA graph.
  CHECK(options.interleaved.stopping.target_relative_width == 0.01);
  CHECK(options.interleaved.stopping.min_rounds == 10);
  CHECK(options.interleaved.stopping.max_rounds == 400);
  CHECK(options.interleaved.stopping.max_seconds == 2.0);
  CHECK(options.interleaved.pattern == measurement::LaunchPattern::graph);
  CHECK(options.cache_mode == CacheMode::warm);
  CHECK_FALSE(options.repeat_baselines);
  CHECK(options.collect_metrics);
  CHECK(options.extra_metrics.empty());
  CHECK(options.metric_runs == 3);
  CHECK(options.baselines == std::vector<std::string>{"fa2", "cudnn"});
  CHECK_FALSE(options.locked_sm_clock_mhz.has_value());
  // Spec §1.2's batch table, and the same rule beyond it.
  std::vector<int> batches;
  for (const int n : axis_values(options, Axis::seq_len))
    batches.push_back(seed_batch_for(n));
  CHECK(batches == std::vector<int>{16, 16, 16, 16, 8, 4});
  CHECK(seed_batch_for(256) == 16);
  CHECK(seed_batch_for(32768) == 2);
  CHECK(seed_batch_for(1 << 20) == 1);
}

TEST_CASE("sweep options are parsed and converted") {
  const SweepOptions options = parse_sweep({"--csv",
                                            "--steps",
                                            "1-3,8",
                                            "--seq-lens",
                                            "1024, 4096",
                                            "--dtypes",
                                            "bf16",
                                            "--batch",
                                            "2",
                                            "--heads",
                                            "8",
                                            "--ci-target",
                                            "0.5",
                                            "--min-rounds",
                                            "8",
                                            "--max-rounds",
                                            "50",
                                            "--cell-seconds",
                                            "3.5",
                                            "--launch-pattern",
                                            "gapped",
                                            "--gap-us",
                                            "20",
                                            "--batch-ms",
                                            "4",
                                            "--cold-l2",
                                            "--metrics",
                                            "dram__bytes_read.sum,lts__t_sector_hit_rate.pct",
                                            "--reference",
                                            "cudnn",
                                            "--device",
                                            "1",
                                            "--seed",
                                            "42",
                                            "--timeout",
                                            "12.5",
                                            "--set",
                                            "128,64",
                                            "--reference-repeat",
                                            "--locked-sm-clock",
                                            "1500",
                                            "--run-id",
                                            "h200 night run"});
  CHECK(options.steps == std::vector<int>{1, 2, 3, 8});
  CHECK(options.axes.at(Axis::seq_len) == std::vector<int>{1024, 4096});
  CHECK(options.axes.at(Axis::dtype) == std::vector<int>{static_cast<int>(DType::BF16)});
  CHECK(options.axes.at(Axis::batch) == std::vector<int>{2});
  CHECK(options.axes.at(Axis::heads) == std::vector<int>{8});
  CHECK(options.interleaved.stopping.target_relative_width == doctest::Approx(0.005));
  CHECK(options.interleaved.stopping.min_rounds == 8);
  CHECK(options.interleaved.stopping.max_rounds == 50);
  CHECK(options.interleaved.stopping.max_seconds == 3.5);
  CHECK(options.interleaved.pattern == measurement::LaunchPattern::gapped);
  CHECK(options.interleaved.gap_us == 20);
  CHECK(options.interleaved.batch_target_ms == 4);
  CHECK(options.cache_mode == CacheMode::cold);
  CHECK(options.extra_metrics ==
        std::vector<std::string>{"dram__bytes_read.sum", "lts__t_sector_hit_rate.pct"});
  // A default metric named again gets no second column.
  CHECK(extra_metric_columns(options) == std::vector<std::string>{"dram__bytes_read.sum"});
  CHECK(sweep_metric_names(options).size() == 4);
  CHECK(options.baselines == std::vector<std::string>{"cudnn"});
  CHECK(options.device == 1);
  CHECK(options.seed == 42);
  CHECK(options.timeout_s == 12.5);
  CHECK(options.set_key == "128,64");
  CHECK(options.repeat_baselines);
  CHECK(options.locked_sm_clock_mhz == 1500);
  CHECK(options.run_id == "h200 night run");

  const SweepOptions off = parse_sweep({"--csv", "--metrics", "none", "--reference", "none"});
  CHECK_FALSE(off.collect_metrics);
  CHECK(sweep_metric_names(off).empty());
  CHECK(off.baselines.empty());

  const SweepOptions explicit_configs = parse_sweep(
      {"--csv", "--config", "(BF16, 128, 64, 64, 4): async+load_0_0_0_tiles", "--config",
       "FlashForwardKernelConfig{5, 128, 64, 64, 4, 1, 0, 1, 0, 0, 0, 0, 0}"});
  REQUIRE(explicit_configs.configs.size() == 2);
  CHECK(explicit_configs.configs[0].dtype == DType::BF16);
  CHECK(explicit_configs.configs[1].swizzled);
}

TEST_CASE("invalid sweep options are refused with the option's name") {
  CHECK(sweep_error({"--csv", "--seq-lens", "512,abc"}) ==
        "--seq-lens: 'abc' is not a whole number written in decimal digits (no sign, no leading "
        "zero)");
  CHECK(sweep_error({"--csv", "--seq-lens", "512,-4"}) ==
        "--seq-lens: '-4' is not a whole number written in decimal digits (no sign, no leading "
        "zero)");
  // A number too large for the kernels' 32-bit lengths is named as such (issue 36).
  CHECK(sweep_error({"--csv", "--seq-lens", "99999999999"}) ==
        "--seq-lens: '99999999999' is out of range: at most 2147483647");
  CHECK(sweep_error({"--csv", "--seq-lens", "0"}) == "--seq-lens: seq_len 0 is not positive");
  CHECK(sweep_error({"--csv", "--seq-lens", "512,512"}) == "--seq-lens: 512 is listed twice");
  CHECK(sweep_error({"--csv", "--dtypes", "fp32"}) ==
        "--dtypes: 'fp32' is not a dtype: fp16, bf16 or e4m3 (fp8)");
  CHECK(sweep_error({"--csv", "--heads-kv", "3", "--heads", "16"}) ==
        "--heads-kv / --heads: heads 16 is not a multiple of heads_kv 3: each K/V head serves a "
        "whole group of query heads (grouped-query attention)");
  CHECK(sweep_error({"--csv", "--heads-kv", "32", "--heads", "16"}) ==
        "--heads-kv / --heads: heads_kv 32 exceeds heads 16: K and V have at most as many heads "
        "as Q");
  CHECK(sweep_error({"--csv", "--pass", "sideways"}) ==
        "--pass: 'sideways' is not a pass: forward or backward");
  CHECK(sweep_error({"--csv", "--seed", "-1"}) ==
        "--seed: '-1' is not a seed: a whole number from 0, e.g. 42");
  CHECK(sweep_error({"--csv", "--d-heads", "0"}) ==
        "--d-heads: d_head 0 is not a head dimension the kernels and references run: a multiple of "
        "64 up to 256 (64, 128, 256)");
  CHECK(sweep_error({"--csv", "--reference", "fa3"}) ==
        "--reference: 'fa3' is not a reference (known: fa2,cudnn, or none)");
  CHECK(sweep_error({"--csv", "--metrics", "none,dram__bytes_read.sum"}) ==
        "--metrics: 'none' cannot be combined with metric names");
  CHECK(sweep_error({"--csv", "--metrics", "a,,b"}) == "--metrics: empty metric name in 'a,,b'");
  CHECK(contains(sweep_error({"--csv", "--set", "everything"}),
                 "--set: invalid kernels key \"everything\""));
  CHECK(contains(sweep_error({"--csv", "--steps", "0-3"}), "--steps: invalid step list \"0-3\""));
  CHECK(contains(sweep_error({"--csv", "--config", "(FP16, 128): async"}), "--config: "));
  CHECK(sweep_error({"--csv", "--ci-target", "0"}) ==
        "--ci-target: 0 must be a positive width in percent of the median (e.g. 1)");
  CHECK(sweep_error({"--csv", "--min-rounds", "5"}) ==
        "--min-rounds: 5 is below 6, the fewest rounds with a 95 % interval");
  CHECK(sweep_error({"--csv", "--max-rounds", "9"}) == "--max-rounds: 9 is below --min-rounds 10");
  CHECK(sweep_error({"--csv", "--cell-seconds", "0"}) ==
        "--cell-seconds: 0 must be a positive number of seconds");
  CHECK(sweep_error({"--csv", "--launch-pattern", "fast"}) ==
        "--launch-pattern: 'fast' is not a launch pattern: graph, stream or gapped");
  CHECK(sweep_error({"--csv", "--gap-us", "10"}) ==
        "--gap-us: a gap between launches needs --launch-pattern gapped");
  CHECK(sweep_error({"--csv", "--batch-ms", "0"}) ==
        "--batch-ms: 0 must be a positive number of milliseconds");
  CHECK(sweep_error({"--csv", "--metric-runs", "0"}) ==
        "--metric-runs: 0 is below 1: at least one profiled launch is needed");
  CHECK(sweep_error({"--csv", "--batch", "0"}) == "--batch: batch 0 is not positive");
  CHECK(sweep_error({"--csv", "--heads", "0"}) == "--heads: heads 0 is not positive");
  CHECK(sweep_error({"--csv", "--d-heads", "64,x"}) ==
        "--d-heads: 'x' is not a whole number written in decimal digits (no sign, no leading "
        "zero)");
  CHECK(sweep_error({"--csv", "--d-heads", "96"}) ==
        "--d-heads: d_head 96 is not a head dimension the kernels and references run: a multiple "
        "of 64 up to 256 (64, 128, 256)");
  CHECK(
      contains(sweep_error({"--csv", "--d-heads", "512"}), "--d-heads: d_head 512 is not a head"));
  CHECK(sweep_error({"--csv", "--timeout", "0"}) ==
        "--timeout: 0 must be a positive number of seconds");
  CHECK(sweep_error({"--csv", "--locked-sm-clock", "-5"}) ==
        "--locked-sm-clock: -5 is not a clock in MHz");
  CHECK(sweep_error({"--csv", "--run-id", "a,b"}) ==
        "--run-id: 'a,b' may not hold commas, quotes or line breaks");
  // CLI11's own checks: sweep options need --csv; --config and --set exclude each other.
  CHECK(contains(sweep_error({"--steps", "1"}), "CLI: --steps requires --csv"));
  CHECK(contains(sweep_error({"--csv", "--set", "tune", "--config",
                              "(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles"}),
                 "excludes"));
  CHECK(contains(sweep_error({"--csv", "--runs", "many"}), "CLI: "));
}

TEST_CASE("every problem of the sweep options is reported at once, each naming its value") {
  // Issue 22: one run names every problem, so a user does not fix one only to meet the next.
  std::vector<std::string> problems;
  try {
    parse_sweep({"--csv", "--seq-lens", "512,abc", "--dtypes", "fp32", "--heads", "0", "--config",
                 "(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles+bogus", "--steps", "0-3"});
  } catch (const cli::UsageError& error) {
    problems = error.problems();
  }
  REQUIRE(problems.size() == 5);
  CHECK(contains(problems[0], "--config: cannot parse config"));
  CHECK(contains(problems[0], "\"bogus\" is not a feature"));
  CHECK(contains(problems[1], "--steps: invalid step list \"0-3\""));
  CHECK(problems[2] == "--dtypes: 'fp32' is not a dtype: fp16, bf16 or e4m3 (fp8)");
  CHECK(problems[3] ==
        "--seq-lens: 'abc' is not a whole number written in decimal digits (no sign, no leading "
        "zero)");
  CHECK(problems[4] == "--heads: heads 0 is not positive");
  // An option whose text did not parse is not reported a second time by the range checks.
  try {
    parse_sweep({"--csv", "--seq-lens", "abc"});
    FAIL("accepted");
  } catch (const cli::UsageError& error) {
    CHECK(error.problems().size() == 1);
  }
}

TEST_CASE("a worker gets its settings and the plan as data, and reads them back exactly") {
  SweepOptions options;
  options.configs = {configs::progression()[3], bf16(configs::progression()[0])};
  options.steps = {2, 5};
  options.axes[Axis::seq_len] = {256, 8192};
  options.axes[Axis::batch] = {3};
  options.axes[Axis::heads] = {4};
  options.interleaved.stopping.target_relative_width = 0.0075;
  options.interleaved.stopping.min_rounds = 12;
  options.interleaved.stopping.max_rounds = 99;
  options.interleaved.stopping.max_seconds = 1.25;
  options.interleaved.pattern = measurement::LaunchPattern::gapped;
  options.interleaved.gap_us = 12.5;
  options.interleaved.batch_target_ms = 3;
  options.cache_mode = CacheMode::cold;
  options.extra_metrics = {"dram__bytes_read.sum"};
  options.metric_runs = 5;
  options.repeat_baselines = false;
  options.locked_sm_clock_mhz = 1410;
  options.run_id = "gpu-2 2026-11-21T07:35:40Z";
  options.device = 1;
  options.seed = 987654321;
  KernelRegistry registry;
  registry.add(entry_for(2, configs::progression()[3]));
  registry.add(entry_for(5, bf16(configs::progression()[0])));
  const SweepPlan plan = plan_sweep(options, registry, {"cudnn"});
  REQUIRE(plan.units.size() == 4);  // fp16 and bf16 (the configs' dtypes) x two N
  const std::string text = format_worker_job(options, plan);
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);)
    lines.push_back(line);
  const WorkerJob job = parse_worker_job(lines);
  CHECK(job.options.device == 1);
  CHECK(job.options.seed == options.seed);
  CHECK(job.options.run_id == options.run_id);
  CHECK(job.options.locked_sm_clock_mhz == 1410);
  CHECK(job.options.interleaved.stopping.target_relative_width == 0.0075);
  CHECK(job.options.interleaved.stopping.min_rounds == 12);
  CHECK(job.options.interleaved.stopping.max_rounds == 99);
  CHECK(job.options.interleaved.stopping.max_seconds == 1.25);
  CHECK(job.options.interleaved.pattern == measurement::LaunchPattern::gapped);
  CHECK(job.options.interleaved.gap_us == 12.5);
  CHECK(job.options.interleaved.batch_target_ms == 3);
  CHECK(job.options.cache_mode == CacheMode::cold);
  CHECK(job.options.collect_metrics);
  CHECK(job.options.extra_metrics == options.extra_metrics);
  CHECK(job.options.metric_runs == 5);
  // The plan itself: every unit's name and every item, problem and all.
  REQUIRE(job.units.size() == plan.units.size());
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    CHECK(job.units[u].name == plan.units[u].name);
    REQUIRE(job.units[u].items.size() == plan.units[u].items.size());
    for (std::size_t i = 0; i < plan.units[u].items.size(); ++i) {
      const MeasurementItem& want = plan.units[u].items[i];
      const MeasurementItem& got = job.units[u].items[i];
      CHECK(got.subject == want.subject);
      CHECK(got.config == want.config);
      CHECK(got.problem == want.problem);
      CHECK(got.recorded == want.recorded);
      CHECK(got.reference_pass == want.reference_pass);
    }
  }
  // Metrics off, no clock: the defaults come back.
  options.collect_metrics = false;
  options.locked_sm_clock_mhz.reset();
  std::vector<std::string> off_lines;
  std::istringstream off_stream(format_worker_job(options, plan));
  for (std::string line; std::getline(off_stream, line);)
    off_lines.push_back(line);
  const WorkerJob off = parse_worker_job(off_lines);
  CHECK_FALSE(off.options.collect_metrics);
  CHECK_FALSE(off.options.locked_sm_clock_mhz.has_value());
  // The worker's command line carries nothing but the row pipe: no option is re-rendered.
  CHECK(cli::sweep_worker_arguments(3) ==
        std::vector<std::string>{"--csv", "--sweep-worker-fd", "3"});
}

TEST_CASE("a job that is not what the parent writes is refused, naming its line") {
  const auto error_of = [](const std::vector<std::string>& lines) {
    try {
      parse_worker_job(lines);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  CHECK(contains(error_of({}), "the first line is not 'flashscope-worker-job 1'"));
  CHECK(contains(error_of({"flashscope-worker-job 1"}), "it ends before its 'end' line"));
  CHECK(contains(error_of({"flashscope-worker-job 1", "setting colour blue", "end"}),
                 "line 2 'setting colour blue': unknown setting"));
  CHECK(contains(error_of({"flashscope-worker-job 1", "item 1\t\tx\t1\t0", "end"}),
                 "an item before the first unit"));
  CHECK(contains(error_of({"flashscope-worker-job 1", "unit u", "item 1\ta\tb", "end"}),
                 "an item has 5 tab-separated fields"));
  CHECK(contains(
      error_of({"flashscope-worker-job 1", "unit u", "item cudnn\t\tdtype=fp16\t1\t1", "end"}),
      "problem record 'dtype=fp16' lacks d_head"));
  CHECK(
      contains(error_of({"flashscope-worker-job 1", "end", "unit u"}), "after the end of the job"));
}

TEST_CASE("--set prog measures each step's own picks as built, references before and after") {
  const KernelRegistry registry = synthetic_registry();
  SweepOptions options;             // prog, both dtypes, six lengths, references repeated
  options.repeat_baselines = true;  // each reference before and after the kernels
  const SweepPlan plan = plan_sweep(options, registry, {"cudnn"});
  // A unit per (dtype, N): the references, every step's configs, the references again, so one
  // input set and one pair of §1.4 references serve every measurement of that shape and the
  // second reference pass shows how far the clocks moved over the kernels.
  REQUIRE(plan.units.size() == 12);
  CHECK(plan.units[0].name == "fp16 N=512");
  CHECK(plan.units[6].name == "bf16 N=512");
  CHECK(plan.units[0].items.size() == 5);  // cudnn, steps 1, 3, 8, cudnn again
  CHECK(plan.units[6].items.size() == 3);  // cudnn, step 1, cudnn again
  std::vector<MeasurementItem> items;
  for (const SweepUnit& unit : plan.units) {
    for (const MeasurementItem& item : unit.items) {
      CHECK(item.problem.dtype == unit.items.front().problem.dtype);
      CHECK(item.problem.seq_len == unit.items.front().problem.seq_len);
      CHECK(item.recorded);
      items.push_back(item);
    }
  }
  // Bigger shapes, more work: the parent hands these out first on several GPUs.
  CHECK(plan.units[5].work_estimate() > plan.units[0].work_estimate());
  // cudnn twice and step 1 in both dtypes, steps 3 and 8 in fp16.
  CHECK(plan.item_count() == 48);
  CHECK(plan.recorded_count() == 48);
  REQUIRE(items.size() == 48);
  CHECK(items[0].subject.text() == "cudnn");
  CHECK(items[0].reference_pass == 1);
  CHECK(items[0].problem.dtype == DType::FP16);
  CHECK(items[0].problem.seq_len == 512);
  CHECK(items[0].problem.batch == 16);
  CHECK(items[1].subject.text() == "1");
  CHECK(items[1].reference_pass == 0);
  CHECK(items[2].subject.text() == "3");
  CHECK(*items[2].config == fp16(configs::progression()[2]));  // the tune config is not a pick
  CHECK(items[3].subject.text() == "8");
  CHECK(items[4].subject.text() == "cudnn");
  CHECK(items[4].reference_pass == 2);
  CHECK(items[4].problem.seq_len == 512);
  CHECK(contains(items[4].label(), "N=512 B=16 (again, after the kernels)"));
  CHECK(items[5].subject.text() == "cudnn");
  CHECK(items[5].reference_pass == 1);
  CHECK(items[5].problem.seq_len == 1024);
  CHECK(items[25].subject.text() == "cudnn");
  CHECK(items[25].problem.seq_len == 16384);
  CHECK(items[25].problem.batch == 4);
  CHECK(items[30].problem.dtype == DType::BF16);
  CHECK(items[30].problem.seq_len == 512);
  CHECK(items[30].reference_pass == 1);
  CHECK(items[31].subject.text() == "1");
  CHECK(items[32].reference_pass == 2);
  std::map<std::string, int> per_step;
  for (const MeasurementItem& item : items)
    ++per_step[item.subject.text()];
  CHECK(per_step == std::map<std::string, int>{{"cudnn", 24}, {"1", 12}, {"3", 6}, {"8", 6}});

  options.repeat_baselines = false;
  const SweepPlan once = plan_sweep(options, registry, {"cudnn"});
  CHECK(once.item_count() == 36);
  for (const SweepUnit& unit : once.units)
    for (const MeasurementItem& item : unit.items)
      CHECK(item.reference_pass == (item.is_baseline() ? 1 : 0));

  bool noted_fa2 = false, noted_step3 = false;
  for (const std::string& note : plan.notes) {
    noted_fa2 = noted_fa2 || contains(note, "reference 'fa2' is not built");
    noted_step3 =
        noted_step3 || contains(note, "step 3: 1 of 2 configs of set 'prog' (fp16,bf16) are built");
  }
  CHECK(noted_fa2);
  CHECK(noted_step3);
}

namespace {

// Step 1's progression config (d_head 128 only) and step 22's progression config at each head
// dimension it runs, fp16.
KernelRegistry registry_with_head_dimensions() {
  KernelRegistry registry;
  registry.add(entry_for(1, fp16(configs::progression()[0])));
  for (const int d_head : {64, 128, 256})
    registry.add(entry_for(22, fp16(configs::headline_config(22, d_head))));
  return registry;
}

}  // namespace

TEST_CASE("--d-heads: each config at its own d_head, references at each, other steps skipped") {
  const KernelRegistry registry = registry_with_head_dimensions();
  SweepOptions options;
  options.repeat_baselines = true;  // each reference before and after the kernels
  options.axes[Axis::dtype] = {static_cast<int>(DType::FP16)};
  options.axes[Axis::seq_len] = {512, 4096};
  // Default: d_head 128 only, the plan of a build without other head dimensions.
  const SweepPlan default_plan = plan_sweep(options, registry, {"cudnn"});
  REQUIRE(default_plan.units.size() == 2);
  CHECK(default_plan.units[0].name == "fp16 N=512");
  for (const SweepUnit& unit : default_plan.units)
    for (const MeasurementItem& item : unit.items)
      CHECK(item.problem.d_head == 128);
  CHECK(default_plan.item_count() == 2 * 4);  // cudnn, steps 1 and 22, cudnn again

  options.axes[Axis::d_head] = {64, 128, 256};
  const SweepPlan plan = plan_sweep(options, registry, {"cudnn"});
  // A unit per (dtype, d_head, N): at 64 and 256 only step 22 runs, with the references at that
  // d_head on the same inputs.
  REQUIRE(plan.units.size() == 3 * 2);
  CHECK(plan.units[0].name == "fp16 d=64 N=512");
  CHECK(plan.units[2].name == "fp16 N=512");
  CHECK(plan.units[5].name == "fp16 d=256 N=4096");
  std::map<int, std::map<std::string, int>> per_d_head;
  for (const SweepUnit& unit : plan.units) {
    const int d_head = unit.items.front().problem.d_head;
    for (const MeasurementItem& item : unit.items) {
      CHECK(item.problem.d_head == d_head);  // never a row of another d_head in a unit
      if (item.config) CHECK(item.config->d_head == item.problem.d_head);
      ++per_d_head[d_head][item.subject.text()];
    }
  }
  CHECK(per_d_head[64] == std::map<std::string, int>{{"cudnn", 4}, {"22", 2}});
  CHECK(per_d_head[128] == std::map<std::string, int>{{"cudnn", 4}, {"1", 2}, {"22", 2}});
  CHECK(per_d_head[256] == std::map<std::string, int>{{"cudnn", 4}, {"22", 2}});
  // The work estimate follows d_head: the same N costs twice the FLOP at twice the d_head.
  CHECK(plan.units[5].items.front().problem.d_head == 256);
  CHECK(contains(plan.units[0].items.front().label(), "fp16 d=64 N=512"));
  // Step 1 is skipped at 64 and 256 with the reason, naming the steps that run them (from the
  // descriptors).
  const std::string runs_64 =
      configs::step_list_text(configs::steps_running(Axis::d_head, configs::problem_at_d_head(64)));
  bool noted_64 = false, noted_256 = false;
  for (const std::string& note : plan.notes) {
    noted_64 = noted_64 || contains(note,
                                    "step 1: 2 problems not measured: step 1 runs d_head "
                                    "128 only; d_head 64 runs on " +
                                        runs_64);
    noted_256 =
        noted_256 || contains(note,
                              "step 1: 2 problems not measured: step 1 runs d_head 128 only; "
                              "d_head 256");
  }
  CHECK(noted_64);
  CHECK(noted_256);

  // Only steps that do not run a d_head: no units there, and a note says so.
  options.steps = {1};
  const SweepPlan step_1 = plan_sweep(options, registry, {"cudnn"});
  for (const SweepUnit& unit : step_1.units)
    for (const MeasurementItem& item : unit.items)
      CHECK(item.problem.d_head == 128);
  bool noted_no_rows = false;
  for (const std::string& note : step_1.notes)
    noted_no_rows = noted_no_rows || contains(note, "d_head 64 runs on " + runs_64);
  CHECK(noted_no_rows);

  // An explicit config is measured at its own d_head, whatever --d-heads says.
  options.steps = {22};
  options.axes[Axis::d_head] = {128};
  options.configs = {fp16(configs::headline_config(22, 256))};
  const SweepPlan explicit_plan = plan_sweep(options, registry, {"cudnn"});
  REQUIRE_FALSE(explicit_plan.units.empty());
  for (const SweepUnit& unit : explicit_plan.units)
    for (const MeasurementItem& item : unit.items)
      CHECK(item.problem.d_head == 256);
}

namespace {

// Step 1's progression config and step 23's (the first step whose descriptor has the causal
// mask), fp16: what the plan asks is the descriptors' answer, not a flag of the entry.
KernelRegistry registry_with_causal_step() {
  KernelRegistry registry;
  registry.add(entry_for(1, fp16(configs::progression()[0])));
  registry.add(entry_for(23, fp16(configs::headline_config(23))));
  return registry;
}

}  // namespace

TEST_CASE("--causal: a unit per mask value, steps without the mask skipped with the reason") {
  const KernelRegistry registry = registry_with_causal_step();
  SweepOptions options;
  options.repeat_baselines = true;  // each reference before and after the kernels
  options.axes[Axis::dtype] = {static_cast<int>(DType::FP16)};
  options.axes[Axis::seq_len] = {512, 4096};
  // Default: no mask, the plan (names, cell keys, shards) of every sweep before the axis.
  CHECK(axis_values(options, Axis::causal) == std::vector<int>{0});
  const SweepPlan default_plan = plan_sweep(options, registry, {"cudnn"});
  REQUIRE(default_plan.units.size() == 2);
  CHECK(default_plan.units[0].name == "fp16 N=512");
  for (const SweepUnit& unit : default_plan.units)
    for (const MeasurementItem& item : unit.items) {
      CHECK_FALSE(item.problem.causal);
      CHECK_FALSE(contains(plan_cell_key(item), "causal"));
      CHECK_FALSE(contains(item.label(), "causal"));
    }
  for (const std::string& note : default_plan.notes)
    CHECK_FALSE(contains(note, "causal"));

  options.axes[Axis::causal] = {0, 1};
  const SweepPlan plan = plan_sweep(options, registry, {"cudnn"});
  REQUIRE(plan.units.size() == 4);
  CHECK(plan.units[0].name == "fp16 N=512");
  CHECK(plan.units[2].name == "fp16 causal N=512");
  CHECK(plan.units[3].name == "fp16 causal N=4096");
  std::map<bool, std::map<std::string, int>> per_mask;
  for (const SweepUnit& unit : plan.units) {
    const bool causal = unit.items.front().problem.causal;
    for (const MeasurementItem& item : unit.items) {
      CHECK(item.problem.causal == causal);  // never a row of the other workload in a unit
      ++per_mask[causal][item.subject.text()];
    }
  }
  // Without the mask every step runs; with it only the step that has it, and the references
  // (on the causal problem) before and after it.
  CHECK(per_mask[false] == std::map<std::string, int>{{"cudnn", 4}, {"1", 2}, {"23", 2}});
  CHECK(per_mask[true] == std::map<std::string, int>{{"cudnn", 4}, {"23", 2}});
  const MeasurementItem& causal_reference = plan.units[3].items.front();
  CHECK(contains(causal_reference.label(), "causal N=4096"));
  CHECK(contains(plan_cell_key(causal_reference), "|4096|causal"));
  // The two workloads of one shape are two plan cells, with the same inputs.
  const MeasurementItem& unmasked_reference = plan.units[1].items.front();
  CHECK(plan_cell_key(unmasked_reference) + "|causal" == plan_cell_key(causal_reference));
  CHECK(input_seed_for(7, unmasked_reference.problem) ==
        input_seed_for(7, causal_reference.problem));
  // A causal problem is half the matmul work of the unmasked one: three items at half the FLOP
  // against four at the full count.
  CHECK(plan.units[3].work_estimate() == doctest::Approx(plan.units[1].work_estimate() * 3 / 8));
  // Step 1 is skipped at causal 1 with the descriptors' reason, naming the steps with the mask.
  const std::string reason =
      *configs::step_refusal_message(1, multi_head_problem(DType::FP16, 16, 512, 16, 128, true));
  CHECK(contains(reason, "step 1 has no causal mask; causal attention runs on steps 23"));
  bool noted = false;
  for (const std::string& note : plan.notes)
    noted = noted || note == "step 1: 2 problems not measured: " + reason;
  CHECK(noted);

  // Only steps without the mask and only the causal workload: nothing to measure, and the
  // message says why, before any GPU is looked for.
  options.steps = {1};
  options.axes[Axis::causal] = {1};
  try {
    plan_sweep(options, registry, {"cudnn"});
    FAIL("a causal plan of a step without the mask was accepted");
  } catch (const std::invalid_argument& error) {
    CHECK(contains(error.what(), "nothing to measure"));
    CHECK(contains(error.what(), "step 1: 2 problems not measured: step 1 has no causal mask"));
  }
  // With the unmasked workload too, the causal half is left out with a note.
  options.axes[Axis::causal] = {0, 1};
  const SweepPlan step_1 = plan_sweep(options, registry, {"cudnn"});
  for (const SweepUnit& unit : step_1.units)
    for (const MeasurementItem& item : unit.items)
      CHECK_FALSE(item.problem.causal);
}

TEST_CASE("--pass backward: backward steps in units of their own, forward steps noted") {
  KernelRegistry registry;
  registry.add(entry_for(1, fp16(configs::progression()[0])));
  const int b1 = kFirstBackwardStep;
  KernelEntry backward = entry_for(b1, fp16(configs::headline_config(b1)));
  backward.launch = nullptr;  // a backward step's entry: its own launcher, never the forward's
  backward.launch_backward = [](const BackwardArgs&, cudaStream_t) { return cudaSuccess; };
  backward.backward_workspace_bytes = [](const BackwardArgs&) { return std::size_t{0}; };
  registry.add(backward);
  SweepOptions options;
  options.axes[Axis::dtype] = {static_cast<int>(DType::FP16)};
  options.axes[Axis::seq_len] = {1024};
  options.axes[Axis::pass] = {static_cast<int>(Pass::forward), static_cast<int>(Pass::backward)};
  const SweepPlan plan = plan_sweep(options, registry, {"cudnn"});
  REQUIRE(plan.units.size() == 2);
  std::map<Pass, std::map<std::string, int>> per_pass;
  std::map<Pass, double> work;
  for (const SweepUnit& unit : plan.units) {
    const Pass pass = unit.items.front().problem.pass;
    for (const MeasurementItem& item : unit.items) {
      CHECK(item.problem.pass == pass);  // never a row of the other pass in a unit
      ++per_pass[pass][item.subject.text()];
    }
    work[pass] = unit.work_estimate();
  }
  // Each pass's steps beside the references of that pass.
  CHECK(per_pass[Pass::forward] == std::map<std::string, int>{{"cudnn", 1}, {"1", 1}});
  CHECK(per_pass[Pass::backward] == std::map<std::string, int>{{"cudnn", 1}, {"B1", 1}});
  // Two items each, the backward's five GEMMs against the forward's two: 2.5 times the work.
  CHECK(work[Pass::backward] == doctest::Approx(work[Pass::forward] * 2.5));
  // The two passes of one shape are two plan cells.
  CHECK(contains(plan_cell_key(plan.units[1].items.front()), "backward"));
  CHECK_FALSE(contains(plan_cell_key(plan.units[0].items.front()), "backward"));
  // Each step is noted at the other pass, naming the steps that run it.
  bool step_1_noted = false, b1_noted = false;
  for (const std::string& note : plan.notes) {
    step_1_noted = step_1_noted || contains(note, "step 1 is a forward step, not a backward one");
    b1_noted = b1_noted || contains(note, "step B1 is a backward step, not a forward one");
  }
  CHECK(step_1_noted);
  CHECK(b1_noted);
  // The backward alone of the forward step: nothing to measure, said before any GPU.
  options.steps = {1};
  options.axes[Axis::pass] = {static_cast<int>(Pass::backward)};
  CHECK_THROWS_WITH_AS(plan_sweep(options, registry, {"cudnn"}),
                       doctest::Contains("nothing to measure"), std::invalid_argument);
}

TEST_CASE("--causal is parsed and validated") {
  CHECK(axis_values(parse_sweep({"--csv"}), Axis::causal) == std::vector<int>{0});
  CHECK(parse_sweep({"--csv", "--causal", "1"}).axes.at(Axis::causal) == std::vector<int>{1});
  CHECK(parse_sweep({"--csv", "--causal", "0,1"}).axes.at(Axis::causal) == std::vector<int>{0, 1});
  CHECK(parse_sweep({"--csv", "--causal", "1, 0"}).axes.at(Axis::causal) == std::vector<int>{1, 0});
  CHECK(sweep_error({"--csv", "--causal", "2"}) ==
        "--causal: '2' is not a mask value: 0 (no mask) or 1 (causal)");
  CHECK(sweep_error({"--csv", "--causal", "yes"}) ==
        "--causal: 'yes' is not a mask value: 0 (no mask) or 1 (causal)");
  CHECK(sweep_error({"--csv", "--causal", "0,"}) == "--causal: an empty value in 0,");
  CHECK(sweep_error({"--csv", "--causal", "1,0,1"}) == "--causal: 1 is listed twice");
  CHECK(contains(sweep_error({"--causal", "1"}), "CLI: --causal requires --csv"));
  // The option struct's own check, for callers that fill it directly (the GUI's run panel).
  SweepOptions options;
  options.axes[Axis::causal] = {3};
  CHECK(sweep_option_problems(options) ==
        std::vector<std::string>{"--causal: causal 3 is not 0 or 1"});
  options.axes[Axis::causal] = {};
  CHECK(sweep_option_problems(options) ==
        std::vector<std::string>{"--causal: at least one value is needed"});
}

TEST_CASE("--heads-kv: grouped problems are units of their own, run by the steps that have them") {
  // Step 25 refuses a grouped problem by its descriptor; step 26 packs the query heads of a group.
  KernelRegistry registry;
  registry.add(entry_for(25, fp16(configs::headline_config(25))));
  registry.add(entry_for(26, fp16(configs::headline_config(26))));
  SweepOptions options;
  options.axes[Axis::dtype] = {static_cast<int>(DType::FP16)};
  options.axes[Axis::seq_len] = {4096};
  options.axes[Axis::heads] = {32, 64};
  options.axes[Axis::heads_kv] = {8};
  const SweepPlan plan = plan_sweep(options, registry, {"cudnn"});
  REQUIRE(plan.units.size() == 2);
  CHECK(plan.units[0].name == "fp16 H=32 kv=8 N=4096");
  CHECK(plan.units[1].name == "fp16 H=64 kv=8 N=4096");
  for (const SweepUnit& unit : plan.units)
    for (const MeasurementItem& item : unit.items) {
      CHECK(item.problem.heads_kv == 8);
      CHECK(item.subject.text() != "25");
      CHECK(contains(plan_cell_key(item), "|kv=8"));
    }
  // The note carries the descriptors' refusal, which names the steps that run grouped heads
  // (whatever steps exist: a test that spelled "step 26" would break with the next such step).
  Problem grouped_64 = multi_head_problem(DType::FP16, seed_batch_for(4096), 4096, 64, 128);
  grouped_64.heads_kv = 8;
  const std::optional<std::string> refusal = configs::step_refusal_message(25, grouped_64);
  REQUIRE(refusal.has_value());
  CHECK(contains(*refusal,
                 "step 25 runs multi-head attention only (heads_kv = heads), not "
                 "heads_kv 8 for 64 heads; grouped-query attention runs on step"));
  bool noted = false;
  for (const std::string& note : plan.notes)
    noted = noted || note == "step 25: 1 problem not measured: " + *refusal;
  CHECK(noted);
  // Without --heads-kv every problem is multi-head (heads_kv derived from heads), and the cell
  // keys are those of plans before the axis: no "kv=" tag.
  options.axes.erase(Axis::heads_kv);
  const SweepPlan multi_head = plan_sweep(options, registry, {"cudnn"});
  for (const SweepUnit& unit : multi_head.units)
    for (const MeasurementItem& item : unit.items) {
      CHECK(item.problem.heads_kv == item.problem.heads);
      CHECK_FALSE(contains(plan_cell_key(item), "kv="));
    }
  // A grouped problem draws other inputs than the multi-head one of the same heads.
  Problem grouped = multi_head_problem(DType::FP16, 16, 4096, 32, 128);
  const std::uint64_t multi_head_seed = input_seed_for(7, grouped);
  grouped.heads_kv = 8;
  CHECK(input_seed_for(7, grouped) != multi_head_seed);
}

TEST_CASE("other sets intersect with what is built for each step") {
  const KernelRegistry registry = synthetic_registry();
  SweepOptions options;
  options.baselines = {};
  options.axes[Axis::seq_len] = {2048};

  options.set_key = "built";
  options.steps = {3};
  SweepPlan plan = plan_sweep(options, registry, {});
  REQUIRE(plan.units.size() == 1);         // fp16 N=2048: step 3 has no bf16 kernel
  CHECK(plan.units[0].items.size() == 2);  // step 3: both of its fp16 configs

  options.set_key = "tune";
  options.steps = {3};
  plan = plan_sweep(options, registry, {});
  REQUIRE(plan.units.size() == 1);
  CHECK(plan.units[0].items.size() == 2);  // progression[2] is a tune member too (spec §5.3)

  options.set_key = "prog";
  options.steps = {12};
  try {
    plan_sweep(options, registry, {});
    FAIL("a plan without kernels was accepted");
  } catch (const std::invalid_argument& error) {
    CHECK(contains(error.what(), "nothing to measure"));
    CHECK(contains(error.what(), "step 12: no kernel of this step is built"));
  }
}

TEST_CASE("explicit configs are measured in their own dtype; unbuilt ones name the closest") {
  const KernelRegistry registry = synthetic_registry();
  SweepOptions options;
  options.baselines = {"cudnn"};
  options.repeat_baselines = false;
  options.axes[Axis::seq_len] = {1024};
  options.configs = {bf16(configs::progression()[0]), fp16(configs::progression()[1])};
  options.steps = {1};  // at several steps, one note names them all (the test below)
  const SweepPlan plan = plan_sweep(options, registry, {"cudnn"});
  // The built step-1 config with cudnn in its dtype; the unbuilt fp16 config gets no unit (its
  // references would be nobody's baseline), only the note naming the closest built configs.
  REQUIRE(plan.units.size() == 1);
  REQUIRE(plan.units[0].items.size() == 2);
  CHECK(plan.units[0].items[0].subject.text() == "cudnn");
  CHECK(plan.units[0].items[0].problem.dtype == DType::BF16);
  CHECK(plan.units[0].items[1].subject.text() == "1");
  CHECK(plan.units[0].items[1].problem.dtype == DType::BF16);
  bool named_closest = false;
  for (const std::string& note : plan.notes)
    named_closest = named_closest || contains(note, "closest built configs of step 1");
  CHECK(named_closest);
}

TEST_CASE("an explicit config a step can never run names the rule once, not a lookup per step") {
  // Steps 1 and 3 copy K/V per warp: 8 warps with B_c = 32 leave K and V unloaded (spec §7.1).
  // Step 8 copies cooperatively and could run it, but this registry has no such kernel.
  const KernelRegistry registry = synthetic_registry();
  KernelConfig known_bad = fp16(configs::progression()[0]);
  known_bad.B_r = 128;
  known_bad.B_c = 32;
  known_bad.n_warps = 8;
  REQUIRE(unsupported_combination(1, known_bad).has_value());
  REQUIRE_FALSE(unsupported_combination(8, known_bad).has_value());
  SweepOptions options;
  options.baselines = {};
  options.configs = {known_bad, fp16(configs::progression()[0])};
  const SweepPlan plan = plan_sweep(options, registry, {});
  std::size_t rule_notes = 0, lookups = 0;
  for (const std::string& note : plan.notes) {
    if (contains(note, "B_c = 32 with 8 warps would leave K and V unloaded")) {
      ++rule_notes;
      CHECK(contains(note, to_short_form(known_bad) + ": never built for steps 1, 3: steps 1–7"));
    }
    lookups += contains(note, "has no kernel built for " + to_short_form(known_bad));
  }
  CHECK(rule_notes == 1);
  CHECK(lookups == 1);  // step 8, where it is valid: the closest built configs
  // Valid but unbuilt at several steps: one note naming them.
  const KernelConfig unbuilt = fp16(configs::progression()[1]);
  options.configs = {unbuilt, fp16(configs::progression()[0])};
  const SweepPlan several = plan_sweep(options, registry, {});
  std::size_t notes_naming_it = 0;
  for (const std::string& note : several.notes)
    if (contains(note, to_short_form(unbuilt))) {
      ++notes_naming_it;
      CHECK(note == to_short_form(unbuilt) +
                        ": not built into this binary for steps 1, 3, 8 (FLASHSCOPE_KERNEL_SET / "
                        "FLASHSCOPE_STEPS; explorer --list shows what is)");
    }
  CHECK(notes_naming_it == 1);
  // A lookup at one such step through configs/ names the rule too (explorer check, Python).
  CHECK_THROWS_WITH_AS(find_kernel(registry, 1, known_bad),
                       doctest::Contains("and no build has one: steps 1–7 copy K/V per warp"),
                       KernelLookupError);
}

TEST_CASE("input seeds are a function of the sweep seed and the shape") {
  const Problem a = multi_head_problem(DType::FP16, 16, 512, 16, 128);
  const Problem b = multi_head_problem(DType::FP16, 16, 1024, 16, 128);
  // Values of the documented derivation (splitmix64 over the sweep seed, then dtype enum value,
  // B, N, H, d; the result modulo (2^64 - 1) / 3), computed outside this code base with
  // Python's integers: a change to the derivation, or to the DType values it mixes in, fails here.
  Problem a_bf16 = a;
  a_bf16.dtype = DType::BF16;
  CHECK(input_seed_for(1, a) == 745094392104651360ull);
  CHECK(input_seed_for(1, a_bf16) == 2988641527592442836ull);
  CHECK(input_seed_for(987654321, multi_head_problem(DType::FP16, 4, 16384, 16, 128)) ==
        4788326835557890738ull);
  CHECK(input_seed_for(1, a) != input_seed_for(1, b));
  CHECK(input_seed_for(1, a) != input_seed_for(1, a_bf16));
  CHECK(input_seed_for(1, a) != input_seed_for(2, a));
}

TEST_CASE("check resolves its kernel or says which configs exist") {
  const KernelRegistry registry = synthetic_registry();
  CheckRequest request;
  request.step = 1;
  CHECK(&resolve_check_kernel(request, registry) ==
        registry.try_find(1, fp16(configs::progression()[0])));
  request.problem.dtype = DType::BF16;
  CHECK(resolve_check_kernel(request, registry).config.dtype == DType::BF16);

  request.config = fp16(configs::progression()[0]);
  CHECK_THROWS_WITH_AS(resolve_check_kernel(request, registry),
                       doctest::Contains("does not compute the problem bf16 N=2048 (its dtype and "
                                         "d_head must be the problem's)"),
                       std::invalid_argument);

  request = CheckRequest{};
  request.step = 3;  // two fp16 kernels built; the step's headline (progression) config wins
  CHECK(resolve_check_kernel(request, registry).config == fp16(configs::progression()[2]));
  request.step = 8;
  request.config = fp16(*configs::step_picks(8).seed_rtx3090);
  try {
    resolve_check_kernel(request, registry);
    FAIL("an unbuilt config was accepted");
  } catch (const KernelLookupError& error) {
    CHECK(contains(error.what(), "step 8 has no kernel built for"));
    CHECK(contains(error.what(), "closest built configs of step 8"));
  }
  request = CheckRequest{};
  request.step = configs::kLastStep + 1;
  CHECK_THROWS_AS(resolve_check_kernel(request, registry), std::out_of_range);
  request.step = 17;  // a step that exists but has no kernel in this registry
  CHECK_THROWS_WITH_AS(resolve_check_kernel(request, registry),
                       doctest::Contains("this build has no kernel for step 17"),
                       KernelLookupError);
  // d_head: step 1 runs 128 only and says which steps run 64; without step 22 built, its d_head
  // 256 config is not found.
  request = CheckRequest{};
  request.step = 1;
  request.problem.d_head = 64;
  const std::string runs_64 =
      configs::step_list_text(configs::steps_running(Axis::d_head, configs::problem_at_d_head(64)));
  CHECK_THROWS_WITH_AS(
      resolve_check_kernel(request, registry),
      doctest::Contains(("step 1 runs d_head 128 only; d_head 64 runs on " + runs_64).c_str()),
      std::invalid_argument);
  const KernelRegistry heads = registry_with_head_dimensions();
  request.step = 22;
  for (const int d_head : {64, 128, 256}) {
    request.problem.d_head = d_head;
    CHECK(resolve_check_kernel(request, heads).config.d_head == d_head);
  }
  request = CheckRequest{};
  request.step = 1;
  request.problem.seq_len = 0;
  CHECK_THROWS_WITH_AS(resolve_check_kernel(request, registry),
                       "the problem fp16 N=0: seq_len 0 is not positive", std::invalid_argument);
}

TEST_CASE("check --causal: a step without the mask is refused naming the steps that have it") {
  CheckRequest request;
  request.step = 1;
  request.problem.causal = true;
  const KernelRegistry registry = registry_with_causal_step();
  const KernelEntry& unmasked = resolve_check_kernel(request, registry);
  const std::string refusal = *configs::step_refusal_message(1, request.problem);
  CHECK(contains(refusal, "step 1 has no causal mask; causal attention runs on steps 23"));
  CHECK_THROWS_WITH_AS(validate_request_problem(unmasked, request.problem), refusal.c_str(),
                       LaunchValidationError);
  request.problem.causal = false;
  CHECK_NOTHROW(validate_request_problem(unmasked, request.problem));
  // A step with the mask takes the causal request (step 23).
  request.step = 23;
  request.problem.causal = true;
  const KernelEntry& masked = resolve_check_kernel(request, registry);
  CHECK_NOTHROW(validate_request_problem(masked, request.problem));

  // The command line: --causal sets the request's mask, and is checked before any GPU is used.
  cli::CheckCli check;
  check.step = built_kernels().entries().front()->step;
  check.seed = "1";
  CHECK_FALSE(cli::check_request_from_cli(check).problem.causal);
  check.axes[Axis::causal] = "1";
  if (configs::step_descriptor(check.step).causal) {
    CHECK(cli::check_request_from_cli(check).problem.causal);
  } else {
    try {
      cli::check_request_from_cli(check);
      FAIL("a causal check of a step without the mask was accepted");
    } catch (const cli::UsageError& error) {
      REQUIRE(error.problems().size() == 1);
      CHECK(contains(error.problems()[0], "has no causal mask"));
    }
  }
}

TEST_CASE(
    "check's e4m3 quantizer options: values, e4m3 only, per-tile on steps with block descales") {
  // The messages of every problem found (a build without the step's kernels adds its own).
  const auto problems = [](const cli::CheckCli& check) {
    try {
      cli::check_request_from_cli(check);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  cli::CheckCli check;
  check.step = 29;
  check.axes[Axis::dtype] = "e4m3";
  check.quantize = "per-row";
  CHECK(problems(check).find("--quantize: 'per-row' is not a quantizer: per-head, "
                             "per-head+hadamard, per-tile or per-tile+hadamard") !=
        std::string::npos);
  check.quantize = "per-tile";
  std::vector<int> block_steps;
  for (const StepDescriptor& step : configs::forward_step_descriptors())
    if (step.block_descales) block_steps.push_back(step.number);
  CHECK(problems(check).find("--quantize per-tile: step 29 reads one descale per sample and "
                             "head; per-tile descales run on " +
                             configs::step_list_text(block_steps)) != std::string::npos);
  check.quantize = "per-head+hadamard";
  CHECK(problems(check).find("--quantize") == std::string::npos);
  check.axes[Axis::dtype] = "bf16";
  check.quantize.reset();
  check.outliers = true;
  CHECK(problems(check).find("--outliers applies to e4m3 inputs, not bf16") != std::string::npos);
}

TEST_CASE("check options are converted with clear errors") {
  cli::CheckCli check;
  check.step = 4;
  check.axes[Axis::dtype] = "half";
  CHECK_THROWS_WITH_AS(cli::check_request_from_cli(check),
                       "--dtype: 'half' is not a dtype: fp16, bf16 or e4m3 (fp8)",
                       std::invalid_argument);
  check.axes[Axis::dtype] = "bf16";
  check.config = "(FP16, 128, 64): async";
  CHECK_THROWS_AS(cli::check_request_from_cli(check), std::invalid_argument);
  check.config.clear();
  check.input_scale = 0;
  CHECK_THROWS_WITH_AS(cli::check_request_from_cli(check),
                       "--input-scale: 0 is not a positive finite number", std::invalid_argument);
  // inf is no scale either (issue 36): the inputs would be infinite.
  check.input_scale = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(cli::check_request_from_cli(check),
                       "--input-scale: inf is not a positive finite number", std::invalid_argument);
  check.input_scale = 2;
  check.seed = "5";
  const CheckRequest request = cli::check_request_from_cli(check);
  CHECK(request.step == 4);
  CHECK(request.problem.dtype == DType::BF16);
  CHECK(request.seed == 5);
  CHECK(request.problem.batch == 16);
  CHECK(request.problem.seq_len == 2048);
  CHECK(request.problem.d_head == 128);
  // --d-head defaults to the config's, so a kernel of another d_head is checked at its own
  // (step 22's d_head 64 progression config: every kernel set builds it).
  check.step = 22;
  check.axes.erase(Axis::dtype);
  check.config = to_short_form(configs::headline_config(22, 64));
  REQUIRE_MESSAGE(built_kernels().try_find(22, configs::headline_config(22, 64)) != nullptr,
                  "this build lacks step 22 at d_head 64 (FLASHSCOPE_STEPS)");
  CHECK(cli::check_request_from_cli(check).problem.d_head == 64);
  check.axes[Axis::d_head] = "256";  // as given, and the config's d_head must match it
  CHECK_THROWS_WITH_AS(cli::check_request_from_cli(check),
                       doctest::Contains("does not compute the problem"), std::invalid_argument);
  check.axes[Axis::d_head] = "0";
  CHECK_THROWS_WITH_AS(cli::check_request_from_cli(check),
                       doctest::Contains("--d-head: d_head 0 is not a head dimension"),
                       std::invalid_argument);
  // Grouped K/V heads: a divisor of --heads, else named (before any GPU).
  check.axes.erase(Axis::d_head);
  check.axes[Axis::heads_kv] = "5";
  CHECK_THROWS_WITH_AS(cli::check_request_from_cli(check),
                       doctest::Contains("heads 16 is not a multiple of heads_kv 5"),
                       std::invalid_argument);
}

TEST_CASE("without a GPU, explorer --csv fails with a clear message and writes no CSV") {
  const std::string output =
      testing::scratch_folder("flashscope_test_sweep_cli", "no_gpu") + "/sweep.csv";

  const ProcessResult stdout_only = run_explorer_without_gpu("--csv --seq-lens 512", false);
  CHECK(stdout_only.exit_code == 1);
  CHECK(stdout_only.output.empty());  // no header, no rows

  const ProcessResult all =
      run_explorer_without_gpu("--csv --seq-lens 512 --output '" + output + "'", true);
  CHECK(all.exit_code == 1);
  CHECK(contains(all.output, "explorer --csv: no usable CUDA device: "));
  // Without any driver the runtime says "driver version is insufficient": the message says none.
  CHECK(contains(all.output, "no NVIDIA driver on this machine") != nvidia_driver_present());
  CHECK(contains(all.output, "the sweep needs a GPU"));
  CHECK_FALSE(testing::path_exists(output));

  const ProcessResult bad_option = run_explorer_without_gpu("--csv --dtypes fp32", true);
  CHECK(bad_option.exit_code == 2);
  CHECK(contains(bad_option.output,
                 "explorer --csv: --dtypes: 'fp32' is not a dtype: fp16, bf16 or e4m3 (fp8)"));
  // e4m3 (short name fp8) runs on the FP8 steps only (28): every other step refuses it by name,
  // from its descriptor, before a GPU is looked for (docs/spec/fp8-track.md).
  const ProcessResult fp8 = run_explorer_without_gpu("--csv --dtypes fp8 --steps 7,25", true);
  CHECK(fp8.exit_code == 2);
  CHECK(contains(fp8.output, "nothing to measure"));
  Problem fp8_problem;
  fp8_problem.dtype = DType::E4M3;
  CHECK(contains(fp8.output,
                 "step 7 runs fp16 and bf16 inputs only, not e4m3; e4m3 (FP8) input "
                 "runs on " +
                     configs::step_list_text(configs::steps_running(Axis::dtype, fp8_problem))));
  CHECK(contains(fp8.output, "step 25 runs fp16 and bf16 inputs only, not e4m3"));
  CHECK_FALSE(contains(fp8.output, "CUDA"));
  // Rules that need no GPU are named before one is looked for (issue 36): a length no kernel's
  // tiles divide, and a step whose static head count is another.
  const ProcessResult bad_length = run_explorer_without_gpu("--csv --seq-lens 1000", true);
  CHECK(bad_length.exit_code == 2);
  CHECK(contains(bad_length.output, "nothing to measure"));
  CHECK(contains(bad_length.output, "seq_len 1000 is not a multiple of B_r"));
  CHECK_FALSE(contains(bad_length.output, "CUDA"));
  const ProcessResult bad_seed = run_explorer_without_gpu("--csv --seed -1", true);
  CHECK(bad_seed.exit_code == 2);
  CHECK(contains(bad_seed.output, "--seed: '-1' is not a seed"));

  // Every problem at once, the output folder's included, before any GPU is looked for.
  const ProcessResult several = run_explorer_without_gpu(
      "--csv --dtypes fp32 --steps 0 --output '" + output + ".d/missing/x.csv'", true);
  CHECK(several.exit_code == 2);
  CHECK(contains(several.output, "explorer --csv: --steps: invalid step list \"0\""));
  CHECK(contains(several.output,
                 "explorer --csv: --dtypes: 'fp32' is not a dtype: fp16, bf16 or e4m3 (fp8)"));
  CHECK(contains(several.output, "explorer --csv: --output: '" + output + ".d/missing/x.csv'"));
  CHECK(contains(several.output, "3 problems with the arguments; nothing was done"));
  CHECK_FALSE(contains(several.output, "CUDA"));

  // CLI11's own errors exit 2 too (not 105 or 109), and help exits 0.
  CHECK(run_explorer_without_gpu("--csv --runs many", true).exit_code == 2);
  CHECK(run_explorer_without_gpu("--frobnicate", true).exit_code == 2);
  CHECK(run_explorer_without_gpu("check", true).exit_code == 2);
  CHECK(run_explorer_without_gpu("check --help", true).exit_code == 0);

  // An earlier --output stays as it was when the sweep fails, and no partial file is left.
  {
    std::FILE* previous = std::fopen(output.c_str(), "w");
    REQUIRE(previous != nullptr);
    std::fputs("earlier\n", previous);
    std::fclose(previous);
  }
  CHECK(
      run_explorer_without_gpu("--csv --seq-lens 512 --output '" + output + "'", true).exit_code ==
      1);
  CHECK(testing::file_bytes(output) == 8);
  CHECK_FALSE(testing::path_exists(output + ".partial"));
  std::remove(output.c_str());
}

TEST_CASE("without a GPU, explorer check fails with exit code 3; bad requests with 2") {
  const ProcessResult no_gpu = run_explorer_without_gpu(
      "check --step " + std::to_string(built_kernels().entries().front()->step), true);
  CHECK(no_gpu.exit_code == 3);
  CHECK(contains(no_gpu.output, "explorer check: no usable CUDA device"));
  const ProcessResult unknown = run_explorer_without_gpu(
      "check --step 1 --config '(FP16, 128, 64, 64, 4): async+eager+load_0_0_0_tiles+buffer'",
      true);
  CHECK(unknown.exit_code == 2);
  CHECK(contains(unknown.output, "explorer check: step 1 has no kernel built for"));
  // Shape rules need no GPU: they are reported as the bad request they are.
  // (A step that takes partial query blocks, as steps 26+ do, answers with its own rule or not at
  // all: the first built kernel of a step that needs whole blocks is asked.)
  const auto& entries = built_kernels().entries();
  const auto whole_blocks = std::find_if(entries.begin(), entries.end(), [](const auto* candidate) {
    return !configs::step_descriptor(candidate->step).partial_blocks;
  });
  if (whole_blocks == entries.end()) {
    MESSAGE("every built step takes partial query blocks: no B_r rule to ask for");
  } else {
    const KernelEntry& entry = **whole_blocks;
    const ProcessResult bad_length = run_explorer_without_gpu(
        "check --step " + std::to_string(entry.step) + " --config '" + to_short_form(entry.config) +
            "' --seq-len " + std::to_string(entry.config.B_r * 3 + 8),
        true);
    CHECK(bad_length.exit_code == 2);
    CHECK(contains(bad_length.output,
                   "is not a multiple of B_r = " + std::to_string(entry.config.B_r)));
  }
  // A causal check of a step without the mask is a bad request on any machine.
  for (const KernelEntry* candidate : built_kernels().entries())
    if (!configs::step_descriptor(candidate->step).causal) {
      const ProcessResult causal =
          run_explorer_without_gpu("check --causal --step " + std::to_string(candidate->step) +
                                       " --config '" + to_short_form(candidate->config) + "'",
                                   true);
      CHECK(causal.exit_code == 2);
      CHECK(contains(causal.output,
                     "step " + std::to_string(candidate->step) + " has no causal mask"));
      break;
    }
  // A grouped problem on a step that runs multi-head attention only, the same way.
  const ProcessResult grouped =
      run_explorer_without_gpu("check --step 1 --heads 16 --heads-kv 4", true);
  CHECK(grouped.exit_code == 2);
  CHECK(contains(grouped.output, "step 1 runs multi-head attention only"));
}

TEST_CASE("--devices and --shard are parsed with errors that name the rule") {
  const SweepOptions all = parse_sweep({"--csv", "--devices", "all"});
  CHECK(all.devices.all);
  const SweepOptions some = parse_sweep({"--csv", "--devices", "2, 0,3"});
  CHECK_FALSE(some.devices.all);
  CHECK(some.devices.indices == std::vector<int>{2, 0, 3});
  const SweepOptions shard = parse_sweep({"--csv", "--shard", "3/8"});
  CHECK(shard.shard == PlanShard{3, 8});
  CHECK(to_string(*shard.shard) == "3/8");
  CHECK_FALSE(parse_sweep({"--csv"}).shard.has_value());

  CHECK(sweep_error({"--csv", "--devices", "0,x"}) ==
        "--devices: 'x' is not a device index (expected all, or indices such as 0,2,3)");
  CHECK(sweep_error({"--csv", "--devices", "1,1"}) ==
        "--devices: device 1 is listed twice (each GPU runs one worker)");
  CHECK(sweep_error({"--csv", "--devices", "-1"}) ==
        "--devices: '-1' is not a device index (expected all, or indices such as 0,2,3)");
  CHECK(sweep_error({"--csv", "--devices", "0,"}) ==
        "--devices: '' is not a device index (expected all, or indices such as 0,2,3)");
  CHECK(contains(sweep_error({"--csv", "--devices", "0", "--device", "1"}), "excludes"));
  CHECK(sweep_error({"--csv", "--shard", "8/8"}) ==
        "--shard: '8/8': K must be in 0..7 (0-based, as $SLURM_ARRAY_TASK_ID with --array=0-7 "
        "or $JOB_COMPLETION_INDEX)");
  CHECK(sweep_error({"--csv", "--shard", "0/0"}) == "--shard: '0/0': N must be at least 1");
  CHECK(sweep_error({"--csv", "--shard", "3"}) ==
        "--shard: '3' is not K/N (shard K of N, K counted from 0, e.g. 0/4)");
  CHECK(sweep_error({"--csv", "--shard", "1/2/3"}) ==
        "--shard: '1/2/3' is not K/N (shard K of N, K counted from 0, e.g. 0/4)");
}

TEST_CASE("the devices a sweep runs on: all, a list, or --device; unknown ones are named") {
  SweepOptions options;
  CHECK(resolve_sweep_devices(options, 4) == std::vector<int>{0});
  options.device = 2;
  CHECK(resolve_sweep_devices(options, 4) == std::vector<int>{2});
  options.devices.all = true;
  CHECK(resolve_sweep_devices(options, 3) == std::vector<int>{0, 1, 2});
  options.devices = parse_device_selection("3,1");
  CHECK(resolve_sweep_devices(options, 4) == std::vector<int>{3, 1});
  CHECK_THROWS_WITH_AS(resolve_sweep_devices(options, 2),
                       "--devices: CUDA device 3 does not exist; this machine has 2 (indices 0..1, "
                       "after CUDA_VISIBLE_DEVICES)",
                       std::invalid_argument);
  options.devices = {};
  options.device = 5;
  CHECK_THROWS_WITH_AS(resolve_sweep_devices(options, 2),
                       "--device: CUDA device 5 does not exist; this machine has 2 (indices 0..1, "
                       "after CUDA_VISIBLE_DEVICES)",
                       std::invalid_argument);
}

TEST_CASE("worker commands round-trip; malformed ones are refused") {
  CHECK(format_worker_command({3, 17}) == "3 17\n");
  const WorkerCommand command = parse_worker_command("3 17");
  CHECK(command.unit == 3);
  CHECK(command.start == 17);
  for (const char* bad : {"", "3", "3 ", " 3 17", "3 17 1", "3 x", "-1 2", "3  17"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_worker_command(bad), std::invalid_argument);
  }
}

namespace {

// Every recorded cell of a plan, as plan_cell_key strings.
// Every recorded measurement of a plan: its cell, and a reference's pass.
std::multiset<std::string> recorded_cells(const SweepPlan& plan) {
  std::multiset<std::string> cells;
  for (const SweepUnit& unit : plan.units)
    for (const MeasurementItem& item : unit.items)
      if (item.recorded)
        cells.insert(plan_cell_key(item) + "#" + std::to_string(item.reference_pass));
  return cells;
}

// A registry with many configs, so shards of it are not trivially small: the 80 tune configs
// (40 per dtype) built for steps 7 and 16, plus step 1's progression config in both dtypes.
KernelRegistry registry_with_tune_configs() {
  KernelRegistry registry;
  for (const int step : {7, 16})
    for (const KernelConfig& c : configs::tune_set())
      registry.add(entry_for(step, c));
  registry.add(entry_for(1, fp16(configs::progression()[0])));
  registry.add(entry_for(1, bf16(configs::progression()[0])));
  return registry;
}

}  // namespace

TEST_CASE("shards cover the plan exactly once, whatever N") {
  const KernelRegistry registry = registry_with_tune_configs();
  SweepOptions options;
  options.set_key = "built";
  const SweepPlan whole = plan_sweep(options, registry, {"fa2", "cudnn"});
  const std::multiset<std::string> every_cell = recorded_cells(whole);
  REQUIRE(every_cell.size() == whole.item_count());
  CHECK(std::set<std::string>(every_cell.begin(), every_cell.end()).size() == every_cell.size());

  for (const int count : {1, 2, 3, 7, 64}) {
    CAPTURE(count);
    std::multiset<std::string> union_of_shards;
    std::size_t smallest = SIZE_MAX, largest = 0;
    for (int index = 0; index < count; ++index) {
      options.shard = PlanShard{index, count};
      const SweepPlan shard = plan_sweep(options, registry, {"fa2", "cudnn"});
      const std::multiset<std::string> cells = recorded_cells(shard);
      union_of_shards.insert(cells.begin(), cells.end());
      smallest = std::min(smallest, cells.size());
      largest = std::max(largest, cells.size());
      for (const SweepUnit& unit : shard.units) {
        // Each unit measures the references of its shape first: written where this shard owns
        // them, else as the baseline of its kernels' pct_* columns.
        bool has_kernels = false;
        for (const MeasurementItem& item : unit.items) {
          if (!item.is_baseline()) has_kernels = true;
          if (!item.recorded) CHECK(item.is_baseline());
          if (item.recorded) CHECK(shard_of_cell(plan_cell_key(item), count) == index);
        }
        if (has_kernels) CHECK(unit.items[0].is_baseline());
        if (has_kernels) CHECK(unit.items[1].is_baseline());
      }
    }
    // Every cell once: no cell in two shards (disjoint), none left out (coverage).
    CHECK(union_of_shards == every_cell);
    // The hash spreads cells evenly enough for a job array: within 25 % of the mean for the
    // counts where each shard holds hundreds of cells.
    if (count <= 7) {
      const double mean = static_cast<double>(every_cell.size()) / count;
      CHECK(static_cast<double>(smallest) > 0.75 * mean);
      CHECK(static_cast<double>(largest) < 1.25 * mean);
    }
  }
}

TEST_CASE("a cell's shard depends on the cell alone: the same on every host, build and run") {
  // Fixed values (FNV-1a 64 of the key, splitmix64 finaliser, modulo N; worked out independently
  // of this code): a change here would split a campaign between two versions differently.
  CHECK(plan_cell_key(RowSubject::kernel(7),
                      parse_short_form("(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles"),
                      multi_head_problem(DType::FP16, 16, 4096, 16, 128)) ==
        "7|(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles|fp16|128|16|16|4096");
  // The axes after the mask keep those keys: a tag each, only off the plain value.
  Problem grouped = multi_head_problem(DType::BF16, 16, 4096, 32, 128, true);
  grouped.heads_kv = 8;
  CHECK(plan_cell_key(RowSubject::baseline(Baseline::cudnn), std::nullopt, grouped) ==
        "cudnn||bf16|128|16|32|4096|kv=8|causal");
  grouped.pass = Pass::backward;
  CHECK(problem_key(grouped) == "bf16|128|16|32|4096|kv=8|causal|backward");
  const std::string key = "7|(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles|fp16|128|16|16|4096";
  std::vector<int> shards;
  for (const int count : {1, 2, 3, 4, 8, 100})
    shards.push_back(shard_of_cell(key, count));
  CHECK(shards == std::vector<int>{0, 0, 1, 2, 2, 26});

  // A plan from a build with more kernels, other steps and the options in another order assigns
  // the cells both plans have to the same shards.
  const KernelRegistry big = registry_with_tune_configs();
  KernelRegistry small;
  for (const KernelEntry* entry : big.entries_of_step(7))
    if (entry->config.dtype == DType::BF16) small.add(*entry);
  SweepOptions options;
  options.set_key = "built";
  options.axes[Axis::dtype] = {static_cast<int>(DType::BF16), static_cast<int>(DType::FP16)};
  options.axes[Axis::seq_len] = {16384, 1024};
  options.shard = PlanShard{1, 3};
  options.steps = {7};
  const std::multiset<std::string> from_small = recorded_cells(plan_sweep(options, small, {}));
  options.axes[Axis::dtype] = {static_cast<int>(DType::FP16), static_cast<int>(DType::BF16)};
  options.axes[Axis::seq_len] = {1024, 16384, 4096};
  options.steps = {16, 7, 1};
  const std::multiset<std::string> from_big = recorded_cells(plan_sweep(options, big, {}));
  REQUIRE_FALSE(from_small.empty());
  for (const std::string& cell : from_small) {
    CAPTURE(cell);
    CHECK(from_big.count(cell) == 1);
  }
  // And the plan is a pure function of its inputs: twice the same.
  CHECK(recorded_cells(plan_sweep(options, big, {})) == from_big);
}

TEST_CASE("a shard measures the references its kernels are compared with, writes only its own") {
  const KernelRegistry registry = registry_with_tune_configs();
  SweepOptions options;
  options.repeat_baselines = true;  // both passes of a reference are one cell
  options.set_key = "built";
  options.steps = {7};
  options.axes[Axis::seq_len] = {4096};
  options.axes[Axis::dtype] = {static_cast<int>(DType::FP16)};
  const int count = 4;
  std::size_t baselines = 0, written_references = 0;
  for (int index = 0; index < count; ++index) {
    options.shard = PlanShard{index, count};
    const SweepPlan plan = plan_sweep(options, registry, {"fa2", "cudnn"});
    REQUIRE(plan.units.size() == 1);  // 40 kernels in 4 shards: every shard has some
    // fa2 and cudnn before the kernels, again after them: both passes of a reference are one
    // cell, written by its owner, a baseline of every other shard with kernels here.
    const std::vector<MeasurementItem>& items = plan.units[0].items;
    REQUIRE(items.size() > 4);
    const std::size_t last = items.size() - 1;
    CHECK(items[0].subject.text() == "fa2");
    CHECK(items[1].subject.text() == "cudnn");
    CHECK(items[last - 1].subject.text() == "fa2");
    CHECK(items[last].subject.text() == "cudnn");
    CHECK(items[last].reference_pass == 2);
    std::size_t not_recorded = 0;
    for (const std::size_t r : {std::size_t{0}, std::size_t{1}, last - 1, last}) {
      const bool owner = shard_of_cell(plan_cell_key(items[r]), count) == index;
      CHECK(items[r].recorded == owner);
      baselines += !owner;
      written_references += owner;
      not_recorded += !owner;
    }
    CHECK(items[0].recorded == items[last - 1].recorded);
    CHECK(plan.recorded_count() + not_recorded == plan.item_count());
    bool noted = false;
    for (const std::string& note : plan.notes)
      noted = noted || contains(note, "shard " + std::to_string(index) +
                                          "/4: " + std::to_string(plan.recorded_count()) +
                                          " of 44 plan "
                                          "cells are this shard's");
    CHECK(noted);
  }
  CHECK(written_references == 4);  // each reference row (two passes of two) written once
  CHECK(baselines == 4 * count - 4);
}

TEST_CASE("without a GPU, --devices all fails like any sweep: clearly, writing nothing") {
  const ProcessResult all_devices =
      run_explorer_without_gpu("--csv --seq-lens 512 --devices all", true);
  CHECK(all_devices.exit_code == 1);
  CHECK(contains(all_devices.output, "explorer --csv: no usable CUDA device"));
  const ProcessResult bad_shard = run_explorer_without_gpu("--csv --shard 2/2", true);
  CHECK(bad_shard.exit_code == 2);
  CHECK(contains(bad_shard.output, "--shard: '2/2': K must be in 0..1"));
}

TEST_CASE("an output's partial file is created anew: one that exists is refused and kept") {
  const std::string dir = testing::scratch_folder("flashscope_test_sweep_cli", "partial");
  const std::string output = dir + "/out.csv";
  std::ofstream(output + ".partial") << "an interrupted sweep's rows\n";
  CHECK(cli::atomic_output_problem("--output", output).value() ==
        "--output: '" + output +
            ".partial' exists, left by an earlier run that did not finish (an interrupted sweep "
            "keeps its measured rows there); move or delete it first: this command writes its "
            "output through that file and would overwrite it");
  CHECK_THROWS_WITH_AS(cli::AtomicOutputFile{output}, doctest::Contains("move or delete it first"),
                       std::runtime_error);
  std::ifstream kept(output + ".partial");
  CHECK(std::string(std::istreambuf_iterator<char>(kept), {}) == "an interrupted sweep's rows\n");
  CHECK_FALSE(testing::path_exists(output));
  ::remove((output + ".partial").c_str());
  CHECK_FALSE(cli::atomic_output_problem("--output", output).has_value());
  {
    cli::AtomicOutputFile file(output);
    file.stream() << "rows\n";
    file.commit();
  }
  CHECK(testing::path_exists(output));
  CHECK_FALSE(testing::path_exists(output + ".partial"));
}
