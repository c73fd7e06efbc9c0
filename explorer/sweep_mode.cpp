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

namespace flashscope::cli {

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    items.push_back(item);
    begin = end + 1;
  }
  return items;
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items)
    text += (text.empty() ? "" : ",") + item;
  return text;
}

std::string format_seconds(double seconds) {
  std::ostringstream text;
  text << seconds;
  return text.str();
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
                                  "Steps to measure, e.g. 1-21, 7,16 or 16-21 (default: every step "
                                  "built into this binary)"));
  selection_option(app.add_option("--seq-lens", cli.seq_lens, "Sequence lengths N, comma-separated")
                       ->capture_default_str());
  selection_option(
      app.add_option("--dtypes", cli.dtypes, "fp16, bf16 or fp16,bf16")->capture_default_str());
  selection_option(app.add_option("--d-heads", cli.d_heads,
                                  "Head dimensions, comma-separated: each config is measured at "
                                  "its own d_head, the references at each; a step that does not "
                                  "run a listed d_head is skipped with a note (" +
                                      configs::d_head_support_text() + ")")
                       ->capture_default_str());
  selection_option(
      app.add_option("--causal", cli.causal,
                     "The mask axis: 0 (no mask), 1 (causal: query i attends to keys j <= i) or "
                     "0,1 for both workloads; each is its own set of units, references and pct_* "
                     "baselines; a step without the mask is skipped at 1 with a note (causal "
                     "attention runs on " +
                         configs::step_list_text(configs::steps_supporting_causal()) + ")")
          ->capture_default_str());
  selection_option(app.add_option("--batch", cli.batch,
                                  "Batch size for every N (default: the seed's table, min(16, "
                                  "65536 / N): 16,16,16,16,8,4 for N = 512..16384)"));
  selection_option(app.add_option("--heads", cli.heads, "Heads")->capture_default_str());
  selection_option(app.add_option("--reference", cli.reference,
                                  "References to measure at every (dtype, N): fa2, cudnn, both, or "
                                  "none; one that is not built is noted on stderr and left out")
                       ->capture_default_str());
  selection_option(app.add_flag("--no-reference-repeat", cli.no_reference_repeat,
                                "Measure each reference once per (dtype, N), before the kernels, "
                                "instead of again after them (the repeat shows the drift over "
                                "the kernels' rows: reference_pass 2, summarised at the end)"));
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
  sweep_option(app.add_option("--runs", cli.runs,
                              "Timed launches per measurement, at most; the row's runs column "
                              "says how many were made")
                   ->capture_default_str());
  sweep_option(app.add_option("--min-runs", cli.min_runs,
                              "Timed launches per measurement, at least (capped by --runs)")
                   ->capture_default_str());
  sweep_option(app.add_option("--target-ms", cli.target_ms,
                              "GPU time the timed launches of one measurement aim to cover: "
                              "ceil(target / duration) launches, within --min-runs..--runs; 0 "
                              "always makes --runs (for a fixed count, or set --min-runs equal "
                              "to --runs)")
                   ->capture_default_str());
  sweep_option(app.add_option("--warmup", cli.warmup,
                              "Untimed launches before them, at most; they stop once they cover "
                              "half of --target-ms (at least 2); the first one's duration sizes "
                              "the rest")
                   ->capture_default_str());
  sweep_option(app.add_flag("--cold-l2", cli.cold_l2,
                            "Evict L2 before every launch (memset of 2x the L2 size) instead of "
                            "launching back to back; the mode is recorded in every row"));
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
  // A list item that is not a positive int: digits past int's range are named as such.
  const auto not_a_count = [](const std::string& item, const std::string& example) {
    const bool digits = !item.empty() && std::all_of(item.begin(), item.end(), [](char ch) {
      return ch >= '0' && ch <= '9';
    });
    if (digits && item.find_first_not_of('0') != std::string::npos)
      return "'" + item + "' is out of range: at most " +
             std::to_string(std::numeric_limits<int>::max()) + " (a 32-bit int; expected e.g. " +
             example + ")";
    return "'" + item + "' is not a positive integer (expected e.g. " + example + ")";
  };
  options.seq_lens.clear();
  for (const std::string& item : split_list(cli.seq_lens)) {
    int value = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || error != std::errc() || end != item.data() + item.size() || value <= 0)
      fail("--seq-lens", not_a_count(item, "512,1024,4096"));
    else
      options.seq_lens.push_back(value);
  }
  options.dtypes.clear();
  for (const std::string& item : split_list(cli.dtypes)) {
    const std::optional<DType> dtype = dtype_from_string(item);
    if (!dtype)
      fail("--dtypes", "'" + item + "' is not fp16 or bf16");
    else if (std::find(options.dtypes.begin(), options.dtypes.end(), *dtype) ==
             options.dtypes.end())
      options.dtypes.push_back(*dtype);
  }
  options.d_heads.clear();
  for (const std::string& item : split_list(cli.d_heads)) {
    int value = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || error != std::errc() || end != item.data() + item.size() || value <= 0)
      fail("--d-heads", not_a_count(item, "64,128,256"));
    else if (std::find(options.d_heads.begin(), options.d_heads.end(), value) ==
             options.d_heads.end())
      options.d_heads.push_back(value);
  }
  options.causal.clear();
  for (const std::string& item : split_list(cli.causal)) {
    if (item != "0" && item != "1") {
      fail("--causal", "'" + item + "' is not a mask value: 0 (no mask) or 1 (causal), e.g. 0,1");
      continue;
    }
    const int mask = item == "1" ? 1 : 0;
    if (std::find(options.causal.begin(), options.causal.end(), mask) == options.causal.end())
      options.causal.push_back(mask);
  }
  options.batch = cli.batch;
  options.heads = cli.heads;
  options.timing.timed_runs = cli.runs;
  options.timing.min_timed_runs = cli.min_runs;
  options.timing.target_ms = cli.target_ms;
  options.timing.warmup_runs = cli.warmup;
  options.timing.cache_mode = cli.cold_l2 ? CacheMode::cold : CacheMode::warm;
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
  options.repeat_baselines = !cli.no_reference_repeat;
  options.locked_sm_clock_mhz = cli.locked_sm_clock_mhz;
  options.run_id = cli.run_id;
  options.device = cli.device;
  if (!cli.devices.empty())
    problems.check([&] { options.devices = parse_device_selection(cli.devices); });
  if (!cli.shard.empty()) problems.check([&] { options.shard = parse_plan_shard(cli.shard); });
  options.seed = cli.seed ? *cli.seed : 0;
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

std::vector<std::string> sweep_worker_arguments(const SweepOptions& options, int row_fd) {
  std::vector<std::string> args = {"--csv"};
  const auto add = [&args](const std::string& name, const std::string& value) {
    args.push_back(name);
    args.push_back(value);
  };
  if (options.configs.empty()) {
    add("--set", options.set_key);
  } else {
    for (const KernelConfig& c : options.configs)
      add("--config", to_short_form(c));
  }
  if (!options.steps.empty()) {
    std::vector<std::string> steps;
    for (const int step : options.steps)
      steps.push_back(std::to_string(step));
    add("--steps", join(steps));
  }
  std::vector<std::string> lengths;
  for (const int n : options.seq_lens)
    lengths.push_back(std::to_string(n));
  add("--seq-lens", join(lengths));
  std::vector<std::string> dtypes;
  for (const DType dtype : options.dtypes)
    dtypes.emplace_back(dtype_lower_name(dtype));
  add("--dtypes", join(dtypes));
  std::vector<std::string> d_heads;
  for (const int d_head : options.d_heads)
    d_heads.push_back(std::to_string(d_head));
  add("--d-heads", join(d_heads));
  std::vector<std::string> masks;
  for (const int mask : options.causal)
    masks.push_back(std::to_string(mask));
  add("--causal", join(masks));
  if (options.batch) add("--batch", std::to_string(*options.batch));
  add("--heads", std::to_string(options.heads));
  add("--runs", std::to_string(options.timing.timed_runs));
  add("--min-runs", std::to_string(options.timing.min_timed_runs));
  add("--target-ms", format_seconds(options.timing.target_ms));
  add("--warmup", std::to_string(options.timing.warmup_runs));
  if (options.timing.cache_mode == CacheMode::cold) args.push_back("--cold-l2");
  if (!options.collect_metrics)
    add("--metrics", "none");
  else if (!options.extra_metrics.empty())
    add("--metrics", join(options.extra_metrics));
  add("--metric-runs", std::to_string(options.metric_runs));
  add("--reference", options.baselines.empty() ? "none" : join(options.baselines));
  if (!options.repeat_baselines) args.push_back("--no-reference-repeat");
  if (options.locked_sm_clock_mhz)
    add("--locked-sm-clock", std::to_string(*options.locked_sm_clock_mhz));
  if (!options.run_id.empty()) add("--run-id", options.run_id);
  add("--device", std::to_string(options.device));
  if (options.shard) add("--shard", to_string(*options.shard));
  add("--seed", std::to_string(options.seed));
  add("--timeout", format_seconds(options.timeout_s));
  add("--sweep-worker-fd", std::to_string(row_fd));
  return args;
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
  if (cli.worker_fd >= 0) {
    if (!problems.empty()) return problems.report(std::cerr, "explorer --csv");
    return run_sweep_worker(options, cli.worker_fd, STDIN_FILENO);
  }
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
        options,
        [](const SweepOptions& worker_options, int fd) {
          return sweep_worker_arguments(worker_options, fd);
        },
        observer, std::cerr);
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
