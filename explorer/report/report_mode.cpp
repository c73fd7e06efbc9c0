#include "explorer/report/report_mode.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "explorer/model/result_files.hpp"
#include "explorer/report/results_report.hpp"

#ifndef FLASHSCOPE_SOURCE_DIR
#error "FLASHSCOPE_SOURCE_DIR must name the repository root"
#endif

namespace flashscope::explorer {

struct ReportOptions {
  std::vector<std::string> results;
  std::string results_dir = std::string(FLASHSCOPE_SOURCE_DIR) + "/results";
  std::vector<std::string> update;
  std::vector<std::string> check;
  std::string print;
};

ReportCommand add_report_command(CLI::App& app) {
  ReportCommand report;
  report.options = std::make_shared<ReportOptions>();
  ReportOptions& options = *report.options;
  report.command = app.add_subcommand(
      "report",
      "Regenerate (--update) or verify (--check) the measured blocks of markdown documents "
      "(<!-- flashscope:begin NAME --> ... <!-- flashscope:end NAME -->) from result CSVs");
  report.command->add_option("--results", options.results,
                             "Result CSVs (default: every *.csv under --results-dir)");
  report.command
      ->add_option("--results-dir", options.results_dir,
                   "Folder searched for CSVs when --results is not given")
      ->capture_default_str();
  report.command->add_option("--update", options.update, "Rewrite these documents' blocks")
      ->check(CLI::ExistingFile);
  report.command
      ->add_option("--check", options.check,
                   "Exit 1 if any block of these documents differs from the data")
      ->check(CLI::ExistingFile);
  report.command->add_option(
      "--print", options.print,
      "Print one block (e.g. progression, vs-fa2-16, clocks, drift, warnings, autotune-7, "
      "step-12, counters-04; a wrong name lists them all)");
  return report;
}

int ReportCommand::run() const {
  const ReportOptions& options = *this->options;
  std::vector<std::string> paths = options.results;
  if (paths.empty()) paths = find_result_csvs(options.results_dir);
  if (paths.empty()) {
    std::cerr << "explorer report: no result CSVs (none given, none under " << options.results_dir
              << ")\n";
    return 1;
  }
  const LoadOutcome loaded = load_result_files(paths);
  for (const std::string& problem : loaded.problems)
    std::cerr << "explorer report: " << problem << "\n";
  if (!loaded.problems.empty()) return 1;
  std::vector<const ResultRow*> rows;
  for (const ResultFile& file : loaded.files)
    for (const ResultRow& row : file.rows)
      rows.push_back(&row);
  const RowSet set(std::move(rows));
  const auto blocks = report_blocks(set);

  if (!options.print.empty()) {
    const auto found = blocks.find(options.print);
    if (found == blocks.end()) {
      std::cerr << "explorer report: no block '" << options.print << "'; available:";
      for (const auto& [name, text] : blocks)
        std::cerr << " " << name;
      std::cerr << "\n";
      return 1;
    }
    std::cout << found->second;
  }

  int status = 0;
  const auto process = [&](const std::string& path, bool write) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const BlockUpdate update = update_blocks(buffer.str(), blocks);
    for (const std::string& name : update.unknown) {
      std::cerr << path << ": block '" << name << "' cannot be produced from the data\n";
      status = 1;
    }
    for (const std::string& name : update.changed) {
      std::cerr << path << ": block '" << name << "' "
                << (write ? "updated" : "differs from the data (run explorer report --update)")
                << "\n";
      if (!write) status = 1;
    }
    if (write && !update.changed.empty()) std::ofstream(path, std::ios::binary) << update.text;
  };
  try {
    for (const std::string& path : options.update)
      process(path, true);
    for (const std::string& path : options.check)
      process(path, false);
  } catch (const std::invalid_argument& error) {
    std::cerr << "explorer report: " << error.what() << "\n";
    return 1;
  }
  return status;
}

}  // namespace flashscope::explorer
