#include "explorer/sweep_mode.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>

#include "configs/config_sets.hpp"
#include "explorer/usage.hpp"
#include "kernels/common/registry.hpp"
#include "profiling/cupti_metrics.hpp"
#include "profiling/device.hpp"
#include "profiling/baselines/baseline_attention.hpp"
#include "profiling/results/results.hpp"
#include "profiling/sweep/sweep_parent.hpp"
#include "profiling/sweep/sweep_worker.hpp"
#include "kernels/common/text.hpp"

namespace flashscope::cli {

namespace {

std::vector<std::string> split_list(const std::string& list) {
  return text::split_list(list);
}

std::string join(const std::vector<std::string>& items) {
  return text::join(items);
}

volatile std::sig_atomic_t stop_signal = 0;

void request_stop(int signal) {
  stop_signal = signal;
  std::signal(signal, SIG_DFL);  // a second Ctrl-C ends the sweep at once
}

// While a sweep runs, SIGINT and SIGTERM ask it to stop: the parent kills its workers (which run
// in their own process groups, so the terminal's Ctrl-C does not reach them) and returns with
// every row written so far.
class StopOnSignals {
 public:
  StopOnSignals() {
    stop_signal = 0;
    struct sigaction action {};
    action.sa_handler = request_stop;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &previous_interrupt_);
    ::sigaction(SIGTERM, &action, &previous_terminate_);
  }
  ~StopOnSignals() {
    ::sigaction(SIGINT, &previous_interrupt_, nullptr);
    ::sigaction(SIGTERM, &previous_terminate_, nullptr);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  struct sigaction previous_interrupt_ {};
  struct sigaction previous_terminate_ {};
};

std::uint64_t fresh_seed() {
  std::random_device entropy;
  const std::uint64_t high = entropy();
  return ((high << 32) | entropy()) % 1'000'000'000'000ull;  // short enough to type back
}

}  // namespace

void add_selection_options(CLI::App& app, SweepCli& cli, CLI::Option* needs,
                           const std::string& group) {
  const auto selection_option = [&](CLI::Option* option) {
    if (needs != nullptr) option->needs(needs);
    option->group(group);
    return option;
  };
  CLI::Option* set = selection_option(
      app.add_option(
             "--set", cli.set,
             "Configs each step measures: prog (each step's own progression config or picks), "
             "built (every config built for the step), or a selection key of spec §5.4 "
             "(prog_all, tune, all, B_r,B_c such as 128,64) intersected with what is built for "
             "the step; set entries are measured in every --dtypes")
          ->capture_default_str());
  selection_option(app.add_option("--config", cli.configs,
                                  "A config short form to measure instead of a set, e.g. \"(FP16, "
                                  "128, 64, 64, 4): async+load_0_0_0_tiles\"; repeatable; measured "
                                  "in its own dtype for every --steps it is built for")
                       ->allow_extra_args(false)
                       ->excludes(set));
  selection_option(app.add_option("--steps", cli.steps,
                                  "Steps to measure, e.g. 1-21, 7,16 or 16-21, the backward steps "
                                  "as B1-B2 or 101,102 (with --pass backward; each step runs its "
                                  "own pass) (default: every step built into this binary)"));
  // One option per problem axis, from the table: every combination of the listed values is a
  // problem of its own (its unit, references and pct_* baselines); a kernel is measured on the
  // problems its step runs, the others noted with the rule.
  for (const AxisSpec& spec : problem_axes())
    selection_option(
        app.add_option(std::string(spec.sweep_flag), cli.axes[spec.axis],
                       std::string(spec.help) + "; comma-separated" +
                           (spec.axis == Axis::d_head ? " (" + configs::d_head_support_text() + ")"
                                                      : std::string())));
  selection_option(app.add_option("--reference", cli.reference,
                                  "References to measure at every (dtype, N): fa2, cudnn, both, or "
                                  "none; one that is not built is noted on stderr and left out")
                       ->capture_default_str());
  selection_option(app.add_flag("--reference-repeat", cli.reference_repeat,
                                "Time each reference twice in its problem's rounds (reference_pass "
                                "1 and 2): two contenders computing the same thing, whose "
                                "difference is the noise interleaving leaves (an A/A check, "
                                "summarised at the end)"));
}

void add_sweep_options(CLI::App& app, SweepCli& cli) {
  CLI::Option* csv = app.add_flag(
      "--csv", cli.csv,
      "Headless sweep: measure kernels (and references) over shapes and dtypes, one CSV row per "
      "(step, config, dtype, N), written as soon as measured; progress on stderr "
      "(docs/profiling.md, columns in docs/csv-schema.md)");
  const std::string group = "Sweep (with --csv)";
  const auto sweep_option = [&](CLI::Option* option) {
    option->needs(csv)->group(group);
    return option;
  };
  add_selection_options(app, cli, csv, group);
  // Timing: the kernels and references of one problem are timed interleaved, in rounds.
  sweep_option(app.add_option("--ci-target", cli.ci_target_pct,
                              "Rounds go on until every median's 95 % interval (and every "
                              "% of a reference's) is at most this wide, in % of the median")
                   ->capture_default_str());
  sweep_option(app.add_option("--min-rounds", cli.min_rounds,
                              "Timed rounds per problem, at least (6 or more: fewer have no 95 % "
                              "interval)")
                   ->capture_default_str());
  sweep_option(app.add_option("--max-rounds", cli.max_rounds, "Timed rounds per problem, at most")
                   ->capture_default_str());
  sweep_option(app.add_option("--cell-seconds", cli.cell_seconds,
                              "Time cap on one problem's timed rounds; the row says which limit "
                              "stopped them (stop_reason)")
                   ->capture_default_str());
  sweep_option(app.add_option("--launch-pattern", cli.launch_pattern,
                              "How a round's batch of launches is timed: graph (captured into a "
                              "CUDA graph and replayed: no host launch cost timed), stream (back "
                              "to back on a stream) or gapped (an event pair per launch, the GPU "
                              "idle --gap-us before each, like a model's cadence)")
                   ->capture_default_str());
  sweep_option(app.add_option("--gap-us", cli.gap_us,
                              "Idle microseconds before each launch (--launch-pattern gapped)")
                   ->capture_default_str());
  sweep_option(app.add_option("--batch-ms", cli.batch_ms,
                              "GPU time one contender's batch of launches aims to cover per round")
                   ->capture_default_str());
  sweep_option(app.add_flag("--cold-l2", cli.cold_l2,
                            "Evict L2 before every launch (memset of 2x the L2 size, outside the "
                            "timing; makes the pattern gapped); the mode is recorded in every "
                            "row"));
  sweep_option(app.add_option(
      "--metrics", cli.metrics,
      "Extra CUPTI metrics, comma-separated, collected on top of gpu__time_duration.sum, "
      "sm__cycles_elapsed.max and lts__t_sector_hit_rate.pct; 'none' collects no counters"));
  sweep_option(app.add_option("--metric-runs", cli.metric_runs,
                              "Profiled launches per row; each metric column is their median")
                   ->capture_default_str());
  sweep_option(app.add_option("--locked-sm-clock", cli.locked_sm_clock_mhz,
                              "Record that the caller locked the SM clock at this many MHz "
                              "(nvidia-smi -lgc; scripts/gpu_host.sh --lock-sm-clock does it "
                              "and restores it); the sweep never changes clocks, and rows "
                              "measured more than 3 % away from it are flagged in warnings"));
  sweep_option(app.add_option("--run-id", cli.run_id,
                              "Name of this sweep in every row's run_id column (default: "
                              "\"<host> <UTC start time>\"); rows of different runs are never "
                              "compared silently, so sweeps that belong together may share one"));
  CLI::Option* device = sweep_option(
      app.add_option("--device", cli.device, "CUDA device index")->capture_default_str());
  sweep_option(app.add_option("--devices", cli.devices,
                              "Spread the sweep over these GPUs: all (every device CUDA sees, "
                              "after CUDA_VISIBLE_DEVICES) or indices such as 0,2,3; one worker "
                              "process per GPU takes the next (dtype, N) unit of the one plan "
                              "whenever it is free, and every row names its GPU")
                   ->excludes(device));
  sweep_option(app.add_option(
      "--shard", cli.shard,
      "Measure only shard K of N of the plan (K from 0, e.g. $SLURM_ARRAY_TASK_ID/N): a stable "
      "hash of each cell picks its shard, so N runs of the same selection cover it exactly once; "
      "join their CSVs with `explorer merge`. Without --seed every shard uses seed 0"));
  sweep_option(app.add_option(
      "--output", cli.output,
      "Write the CSV here instead of stdout: rows go to FILE.partial as they are measured, which "
      "becomes FILE when the plan is finished; a stopped or failed sweep leaves its rows in "
      "FILE.partial and FILE as it was"));
  sweep_option(app.add_option("--seed", cli.seed,
                              "Input seed (default: a fresh one, printed and recorded per row as "
                              "input_seed; explorer check --seed <input_seed> reproduces a row's "
                              "inputs)"));
  sweep_option(app.add_option("--timeout", cli.timeout_s,
                              "Seconds a measurement may take before its worker is killed and the "
                              "row reported as a fault")
                   ->capture_default_str());
  // The parent starts workers of itself with this; it is not for people.
  sweep_option(app.add_option("--sweep-worker-fd", cli.worker_fd))->group("");
}

SweepOptions sweep_options_from_cli(const SweepCli& cli) {
  // Every option is checked and every problem kept, so one run reports them all (UsageError).
  UsageProblems problems;
  // Options whose text did not parse: the range checks below would only repeat them.
  std::vector<std::string> unparsed;
  const auto fail = [&](const std::string& option, const std::string& problem) {
    problems.add(option + ": " + problem);
    unparsed.push_back(option);
  };
  SweepOptions options;
  options.set_key = cli.set;
  for (const std::string& text : cli.configs) {
    try {
      options.configs.push_back(parse_config(text));
    } catch (const ConfigParseError& error) {
      fail("--config", error.what());
    }
  }
  if (!cli.steps.empty()) {
    try {
      options.steps = configs::parse_step_list(cli.steps);
    } catch (const std::invalid_argument& error) {
      fail("--steps", error.what());
    }
  }
  for (const AxisSpec& spec : problem_axes()) {
    const auto given = cli.axes.find(spec.axis);
    if (given == cli.axes.end() || !given->second) continue;
    const std::string flag(spec.sweep_flag);
    std::vector<int>& values = options.axes[spec.axis];
    for (const std::string& item : split_list(*given->second)) {
      try {
        if (item.empty()) throw std::invalid_argument("an empty value in " + *given->second);
        values.push_back(spec.parse(item));
      } catch (const std::invalid_argument& error) {
        fail(flag, error.what());
      }
    }
  }
  measurement::InterleavedSettings& timing = options.interleaved;
  timing.stopping.target_relative_width = cli.ci_target_pct / 100.0;
  timing.stopping.min_rounds = cli.min_rounds;
  timing.stopping.max_rounds = cli.max_rounds;
  timing.stopping.max_seconds = cli.cell_seconds;
  if (const auto pattern = measurement::launch_pattern_from_string(cli.launch_pattern))
    timing.pattern = *pattern;
  else
    fail("--launch-pattern",
         text::quoted(cli.launch_pattern) + " is not a launch pattern: graph, stream or gapped");
  timing.gap_us = cli.gap_us;
  timing.batch_target_ms = cli.batch_ms;
  options.cache_mode = cli.cold_l2 ? CacheMode::cold : CacheMode::warm;
  if (cli.metrics == "none") {
    options.collect_metrics = false;
  } else if (!cli.metrics.empty()) {
    for (const std::string& metric : split_list(cli.metrics)) {
      if (metric.empty())
        fail("--metrics", "empty metric name in '" + cli.metrics + "'");
      else if (metric == "none")
        fail("--metrics", "'none' cannot be combined with metric names");
      else
        options.extra_metrics.push_back(metric);
    }
  }
  options.metric_runs = cli.metric_runs;
  options.baselines.clear();
  if (cli.reference != "none") {
    const std::vector<std::string> known = known_baselines();
    for (const std::string& name : split_list(cli.reference)) {
      if (std::find(known.begin(), known.end(), name) == known.end())
        fail("--reference",
             "'" + name + "' is not a reference (known: " + join(known) + ", or none)");
      else if (std::find(options.baselines.begin(), options.baselines.end(), name) ==
               options.baselines.end())
        options.baselines.push_back(name);
    }
  }
  options.repeat_baselines = cli.reference_repeat;
  options.locked_sm_clock_mhz = cli.locked_sm_clock_mhz;
  options.run_id = cli.run_id;
  options.device = cli.device;
  if (!cli.devices.empty())
    problems.check([&] { options.devices = parse_device_selection(cli.devices); });
  if (!cli.shard.empty()) problems.check([&] { options.shard = parse_plan_shard(cli.shard); });
  if (cli.seed) {
    bool out_of_range = false;
    if (const auto seed = text::parse_decimal(*cli.seed, INT64_MAX, &out_of_range))
      options.seed = static_cast<std::uint64_t>(*seed);
    else
      fail("--seed", text::quoted(*cli.seed) +
                         (out_of_range ? " is out of range (0 to 9223372036854775807)"
                                       : " is not a seed: a whole number from 0, e.g. 42"));
  }
  options.timeout_s = cli.timeout_s;
  for (const std::string& problem : sweep_option_problems(options)) {
    const bool repeats = std::any_of(unparsed.begin(), unparsed.end(), [&](const std::string& o) {
      return problem.starts_with(o + ":");
    });
    if (!repeats) problems.add(problem);
  }
  problems.throw_if_any();
  return options;
}

std::vector<std::string> sweep_worker_arguments(int row_fd) {
  return {"--csv", "--sweep-worker-fd", std::to_string(row_fd)};
}

int run_sweep_mode(const SweepCli& cli) {
  // One validation pass before any device is touched or file written: every problem at once.
  UsageProblems problems;
  SweepOptions options;
  bool options_valid = false;
  problems.check([&] {
    options = sweep_options_from_cli(cli);
    options_valid = true;
  });
  if (cli.worker_fd >= 0) return run_sweep_worker(cli.worker_fd, STDIN_FILENO);
  if (!cli.output.empty()) {
    if (const auto problem = output_file_problem("--output", cli.output)) problems.add(*problem);
    std::error_code error;
    if (std::filesystem::exists(cli.output + ".partial", error))
      problems.add("--output: '" + cli.output + ".partial' exists: the rows of an interrupted " +
                   "sweep; move or delete it first (this sweep would overwrite it)");
  }
  // The plan needs no GPU: a selection that measures nothing is a usage error too.
  if (options_valid)
    problems.check([&] { plan_sweep(options, built_kernels(), built_baselines()); });
  if (!problems.empty()) return problems.report(std::cerr, "explorer --csv");

  if (!cli.seed) {
    if (options.shard) {
      options.seed = 0;  // every shard must draw the same inputs at a shape
      std::cerr << "note: --shard without --seed: input seed 0, as on every other shard\n";
    } else {
      options.seed = fresh_seed();
    }
  }

  // Rows go to FILE.partial as they are measured (flushed each), which becomes FILE once the
  // plan is finished: FILE is never a cut-short sweep, and an interrupted or failed sweep keeps
  // its finished rows in FILE.partial, with FILE as it was before.
  std::optional<AtomicOutputFile> file;
  if (!cli.output.empty()) {
    try {
      file.emplace(cli.output);
    } catch (const std::runtime_error& error) {
      std::cerr << "explorer --csv: --output: " << error.what() << "\n";
      return 2;
    }
  }
  std::ostream& out = file ? file->stream() : std::cout;
  std::optional<ResultsCsvWriter> writer;
  // Where the rows measured so far are, for the messages of a sweep that did not finish.
  const auto rows_kept = [&](std::size_t rows) {
    if (!file) return std::to_string(rows) + " rows measured so far are written";
    if (!writer) return std::string("no row was measured; nothing is written");
    file->keep_partial();
    return std::to_string(rows) + " rows measured so far are in " + file->partial_path() + " (" +
           cli.output + " is left as it was; rename the partial file to use them)";
  };
  std::size_t rows_written = 0;
  try {
    const StopOnSignals stop_on_signals;
    SweepObserver observer;
    observer.on_row = [&](const ResultRow& row) {
      if (!writer) writer.emplace(out, extra_metric_columns(options));
      writer->write(row);
      ++rows_written;
    };
    observer.stop_requested = [] { return stop_signal != 0; };
    const SweepSummary summary = run_sweep(
        options, [](const SweepOptions&, int fd) { return sweep_worker_arguments(fd); }, observer,
        std::cerr);
    if (summary.stopped) {
      std::cerr << "explorer --csv: stopped by signal " << stop_signal << "; the "
                << rows_kept(summary.rows) << "\n";
      return 130;
    }
    // A shard that owns no cell of the selection still leaves a valid (header-only) file.
    if (!writer) writer.emplace(out, extra_metric_columns(options));
    if (file) {
      file->commit();
      std::cerr << "explorer --csv: " << rows_written << " rows written to " << cli.output << "\n";
    }
    return summary.faults > 0 || summary.failed_checks > 0 || summary.device_failed() ? 1 : 0;
  } catch (const NoCudaDevice& error) {
    std::cerr << "explorer --csv: " << error.what() << "; the sweep needs a GPU\n";
    return 1;
  } catch (const UnknownMetric& error) {
    std::cerr << "explorer --csv: --metrics: " << error.what() << "\n";
    if (writer) std::cerr << "explorer --csv: the " << rows_kept(rows_written) << "\n";
    return 2;
  } catch (const std::invalid_argument& error) {
    std::cerr << "explorer --csv: " << error.what() << "\n";
    if (writer) std::cerr << "explorer --csv: the " << rows_kept(rows_written) << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "explorer --csv: " << error.what() << "\n";
    if (writer) std::cerr << "explorer --csv: the " << rows_kept(rows_written) << "\n";
    return 1;
  }
}

}  // namespace flashscope::cli
