// `explorer merge`: joins the CSVs of a sharded sweep into one, after checking they fit together
// (profiling/sweep/result_merge.hpp does the checking). Command-line layer only.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "explorer/sweep_mode.hpp"

namespace flashscope::cli {

struct MergeCli {
  std::vector<std::string> inputs;
  std::string output;
  bool allow_missing = false;
  SweepCli selection;  // only its selection options (--set, --steps, ...) are used
  std::vector<CLI::Option*> selection_options;
};

// Adds the `merge` subcommand; returns it so main can ask whether it was given.
CLI::App* add_merge_command(CLI::App& app, MergeCli& cli);

// Exit code: 0 merged (and, with a selection, every plan cell present); 1 merged but plan cells
// are missing (0 with --allow-missing); 2 nothing written: unreadable input, columns that differ,
// a measurement twice, invalid options or an output that cannot be written.
int run_merge_mode(const MergeCli& cli);

}  // namespace flashscope::cli
