#include "explorer/report/report_mode.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "explorer/model/result_files.hpp"
#include "explorer/usage.hpp"
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
      "(<!-- flashscope:begin NAME --> ... <!-- flashscope:end NAME -->) from result CSVs. Exit "
      "code 0 done (a one-line summary on stderr), 1 a block differs or cannot be produced, or a "
      "CSV cannot be read, 2 invalid arguments or --print name (nothing written).");
  report.command->add_option("--results", options.results,
                             "Result CSVs (default: every *.csv under --results-dir)");
  report.command
      ->add_option("--results-dir", options.results_dir,
                   "Folder searched for CSVs when --results is not given")
      ->capture_default_str();
  report.command->add_option(
      "--update", options.update,
      "Rewrite these documents' blocks (each document written whole: DOC.partial renamed; an "
      "existing DOC.partial is refused; a document without a block fails)");
  report.command->add_option("--check", options.check,
                             "Exit 1 if any block of these documents differs from the data, or a "
                             "document holds no block");
  report.command->add_option(
      "--print", options.print,
      "Print one block (e.g. progression, vs-fa2-16, clocks, drift, warnings, autotune-7, "
      "step-12, counters-04; a wrong name lists them all)");
  return report;
}

int ReportCommand::run() const {
  const ReportOptions& options = *this->options;
  // One validation pass before anything is read or written: every problem at once.
  cli::UsageProblems problems;
  for (const std::string& path : options.results)
    if (const auto problem = cli::input_file_problem("--results", path)) problems.add(*problem);
  if (options.results.empty())
    if (const auto problem = cli::input_directory_problem("--results-dir", options.results_dir))
      problems.add(*problem);
  for (const std::string& path : options.update) {
    if (const auto problem = cli::input_file_problem("--update", path)) problems.add(*problem);
    if (const auto problem = cli::partial_file_problem("--update", path)) problems.add(*problem);
  }
  for (const std::string& path : options.check)
    if (const auto problem = cli::input_file_problem("--check", path)) problems.add(*problem);
  if (options.print.empty() && options.update.empty() && options.check.empty())
    problems.add("nothing to do: give --print NAME, --update DOC.md or --check DOC.md");
  if (!problems.empty()) return problems.report(std::cerr, "explorer report");

  std::vector<std::string> paths = options.results;
  if (paths.empty()) paths = find_result_csvs(options.results_dir);
  if (paths.empty()) {
    std::cerr << "explorer report: --results-dir: no *.csv under " << options.results_dir
              << " (give result CSVs with --results, or measure some with explorer --csv "
                 "--output FILE.csv)\n";
    return 1;
  }
  const LoadOutcome loaded = load_result_files(paths);
  for (const std::string& problem : loaded.problems)
    std::cerr << "explorer report: " << problem << "\n";
  if (!loaded.problems.empty()) return 1;
  std::vector<const ResultRow*> rows;
  std::size_t row_count = 0;
  for (const ResultFile& file : loaded.files)
    for (const ResultRow& row : file.rows) {
      rows.push_back(&row);
      ++row_count;
    }
  const RowSet set(std::move(rows));
  const auto blocks = report_blocks(set);

  if (!options.print.empty()) {
    const auto found = blocks.find(options.print);
    if (found == blocks.end()) {
      std::cerr << "explorer report: --print: no block '" << options.print << "'; available:";
      for (const auto& [name, text] : blocks)
        std::cerr << " " << name;
      std::cerr << "\n";
      return 2;
    }
    std::cout << found->second;
  }

  // Every document is read and checked before any is written, so a marker error in one leaves
  // all of them as they were.
  struct Document {
    std::string path;
    bool write = false;
    BlockUpdate update;
  };
  std::vector<Document> documents;
  std::vector<std::string> marker_errors;
  const auto read = [&](const std::string& path, bool write) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    try {
      documents.push_back({path, write, update_blocks(buffer.str(), blocks)});
    } catch (const std::invalid_argument& error) {
      marker_errors.push_back(path + ": " + error.what());
    }
  };
  for (const std::string& path : options.update)
    read(path, true);
  for (const std::string& path : options.check)
    read(path, false);
  for (const std::string& error : marker_errors)
    std::cerr << "explorer report: " << error << "\n";
  if (!marker_errors.empty()) {
    std::cerr << "explorer report: nothing written\n";
    return 1;
  }

  // A document without a single block has nothing to check or update: that is no match.
  std::size_t empty_documents = 0;
  for (const Document& document : documents)
    if (document.update.blocks == 0) {
      std::cerr << "explorer report: " << document.path
                << ": no generated block (<!-- flashscope:begin NAME --> ... <!-- flashscope:end "
                   "NAME -->); nothing in it was "
                << (document.write ? "updated" : "checked") << "\n";
      ++empty_documents;
    }
  if (empty_documents > 0 && empty_documents == documents.size()) {
    std::cerr << "explorer report: no block in "
              << (documents.size() == 1 ? "the document" : "any of the documents")
              << ": nothing to check or update (explorer report --print NAME prints a block; "
                 "docs/results.md shows how one is marked)\n";
    return 1;
  }

  int status = empty_documents > 0 ? 1 : 0;
  std::size_t block_count = 0, changed = 0, unknown = 0;
  for (const Document& document : documents) {
    block_count += document.update.blocks;
    unknown += document.update.unknown.size();
    changed += document.update.changed.size();
    for (const std::string& name : document.update.unknown) {
      std::cerr << document.path << ": block '" << name << "' cannot be produced from the data\n";
      status = 1;
    }
    for (const std::string& name : document.update.changed) {
      std::cerr << document.path << ": block '" << name << "' "
                << (document.write ? "updated"
                                   : "differs from the data (run explorer report --update " +
                                         document.path + ")")
                << "\n";
      if (!document.write) status = 1;
    }
    if (document.write && !document.update.changed.empty()) {
      try {
        cli::AtomicOutputFile out(document.path);
        out.stream() << document.update.text;
        out.commit();
      } catch (const std::runtime_error& error) {
        std::cerr << "explorer report: " << error.what() << "\n";
        return 1;
      }
    }
  }
  if (!documents.empty()) {
    const std::string mode = options.update.empty()  ? "--check"
                             : options.check.empty() ? "--update"
                                                     : "--update/--check";
    std::cerr << "explorer report " << mode << ": " << block_count << " block"
              << (block_count == 1 ? "" : "s") << " in " << documents.size() << " document"
              << (documents.size() == 1 ? "" : "s") << " from " << row_count << " rows of "
              << loaded.files.size() << " file" << (loaded.files.size() == 1 ? "" : "s") << ": ";
    if (status == 0 && changed == 0)
      std::cerr << "every block matches the data\n";
    else
      std::cerr << changed << " " << (options.check.empty() ? "updated" : "changed or differing")
                << ", " << unknown << " unknown"
                << (empty_documents > 0
                        ? ", " + std::to_string(empty_documents) + " document(s) without a block"
                        : std::string())
                << "\n";
  }
  return status;
}

}  // namespace flashscope::explorer
