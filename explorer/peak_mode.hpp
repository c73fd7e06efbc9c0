// `explorer peak`: the device's ceilings (profiling/ceilings/ceilings.hpp) as results rows.
// Command-line layer only.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace flashscope::cli {

struct PeakCli {
  std::string only = "mma.sync,wgmma,hbm,ex2,smem";
  std::string dtypes = "fp16,bf16";
  int runs = 20;
  int min_runs = 10;
  double target_ms = 200;
  int warmup = 5;
  double work_scale = 1.0;
  int device = 0;
  std::string run_id;  // empty: "<host> <UTC start>"
  std::optional<int> locked_sm_clock_mhz;
  std::string output;  // empty: stdout
};

// Adds the `peak` subcommand; returns it so main can ask whether it was given.
CLI::App* add_peak_command(CLI::App& app, PeakCli& cli);

// Exit code: 0 every row ok or skipped, 1 a fault, a failed check or no GPU, 2 invalid options.
int run_peak_mode(const PeakCli& cli);

}  // namespace flashscope::cli
