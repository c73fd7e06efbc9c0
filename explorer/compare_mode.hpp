// `explorer compare A.csv B.csv`: the compare view's numbers on the command line. Rows are paired
// by what was measured (step, config, dtype, shape, a reference's pass; not the device), so two
// runs of one plan on different GPUs, or with --devices 0 and --devices all, line up row by row.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace flashscope::cli {

struct CompareCli {
  std::string a_path;
  std::string b_path;
  std::optional<double> max_median_percent;  // fail when median |B/A - 1| exceeds it
  bool same_rows = false;                    // fail when a row is only in A or only in B
};

CLI::App* add_compare_command(CLI::App& app, CompareCli& cli);

// Exit code: 0 compared (and within the limits given), 1 a limit is exceeded, 2 an input cannot
// be read.
int run_compare_mode(const CompareCli& cli);

}  // namespace flashscope::cli
