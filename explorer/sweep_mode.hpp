// `explorer --csv`: the headless sweep. This file is the command-line layer only (option names,
// parsing, messages, exit codes); profiling/sweep/sweep_parent.hpp does the work.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/problem_axes.hpp"

#include "profiling/sweep/sweep_plan.hpp"

namespace flashscope::cli {

// The sweep options as typed; sweep_options_from_cli() checks and converts them.
struct SweepCli {
  bool csv = false;
  std::string set = "prog";
  std::vector<std::string> configs;
  std::string steps;  // empty: every built step
  // The problem axes' option texts (--dtypes, --d-heads, --heads-kv, --causal, --seq-lens, …: one
  // option per axis of kernels/common/problem_axes.hpp), as given; an axis not given takes its
  // default.
  std::map<Axis, std::optional<std::string>> axes;
  // Interleaved timing (docs/profiling.md, "Interleaved measurement and intervals").
  double ci_target_pct = 1.0;  // stop once every interval is this narrow (% of the median)
  int min_rounds = 10;
  int max_rounds = 400;
  double cell_seconds = 2.0;  // time cap on one unit's timed rounds
  std::string launch_pattern = "graph";
  double gap_us = 0;
  double batch_ms = 2.0;
  bool cold_l2 = false;
  std::string metrics;  // extra metrics, comma-separated, or "none"
  int metric_runs = 3;
  std::string reference = "fa2,cudnn";
  bool reference_repeat = false;
  std::optional<int> locked_sm_clock_mhz;
  std::string run_id;
  int device = 0;
  std::string devices;              // --devices: "all" or "0,2,3"; empty: --device
  std::string shard;                // --shard K/N; empty: the whole plan
  std::string output;               // empty: stdout
  std::optional<std::string> seed;  // a decimal seed; parsed and checked with the others
  double timeout_s = 300;
  // Set only on worker processes the sweep starts (hidden option): the fd rows go to; commands
  // come on stdin.
  int worker_fd = -1;
};

// Adds --csv and the sweep options to the top-level app. They are rejected without --csv.
void add_sweep_options(CLI::App& app, SweepCli& cli);

// Adds the options that choose what a sweep measures (--set, --config, --steps, one option per
// problem axis, --reference, --no-reference-repeat) to `app`, each needing `needs` (unless null)
// when it is given, in option group `group`. `explorer merge` uses them to name the plan it
// checks coverage against.
void add_selection_options(CLI::App& app, SweepCli& cli, CLI::Option* needs,
                           const std::string& group);

// Throws a UsageError (explorer/usage.hpp) holding every problem, each naming the option, the
// value and the rule.
SweepOptions sweep_options_from_cli(const SweepCli& cli);

// The worker command line (argv without the program name): a worker writing its rows to
// `row_fd`. Everything else — its device, settings and plan — it reads from its stdin as data
// (profiling/sweep/sweep_worker.hpp, format_worker_job).
std::vector<std::string> sweep_worker_arguments(int row_fd);

// Runs the sweep (or, with the hidden worker option, one worker) and returns the exit code:
// 0 every row ok or skipped; 1 a fault, a failed §1.4 check, a device whose worker could not
// start, or no GPU; 2 invalid options, every problem reported before any device is touched;
// 130 stopped by SIGINT or SIGTERM. With --output, rows go to FILE.partial and it is renamed to
// FILE once the plan is finished; a sweep that stops early keeps its rows in FILE.partial.
int run_sweep_mode(const SweepCli& cli);

}  // namespace flashscope::cli
