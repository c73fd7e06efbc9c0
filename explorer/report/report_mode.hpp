// `explorer report`: regenerates or checks the measured blocks of the docs from result CSVs.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>

namespace flashscope::explorer {

struct ReportOptions;

// The `report` subcommand and its parsed options; run() executes it once parsing is done.
struct ReportCommand {
  CLI::App* command = nullptr;
  std::shared_ptr<ReportOptions> options;
  int run() const;
};
ReportCommand add_report_command(CLI::App& app);

}  // namespace flashscope::explorer
