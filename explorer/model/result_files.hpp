// Result files as the explorer holds them. Each CSV keeps its own rows so the compare view can
// pair two files, while the other views show the union of the files the user has enabled.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "profiling/results/results.hpp"

namespace flashscope::explorer {

struct ResultFile {
  std::string path;   // empty for rows measured in this session and not yet saved
  std::string label;  // short name for lists, e.g. "h100/progression.csv"
  std::vector<ResultRow> rows;
  bool shown = true;  // contributes to the progression, sweep, autotune and detail views
};

struct LoadOutcome {
  std::vector<ResultFile> files;
  std::vector<std::string> problems;  // one per unreadable file; each names the file
};

// Every *.csv below `directory` (recursively), sorted; empty when the folder does not exist.
std::vector<std::string> find_result_csvs(const std::filesystem::path& directory);

// Reads each path. A file that cannot be read adds a problem instead of throwing, so one bad
// file never stops the others from loading.
LoadOutcome load_result_files(const std::vector<std::string>& paths);

// "parent/name.csv": enough to tell results/h100/x.csv from results/a100/x.csv.
std::string short_file_label(const std::string& path);

}  // namespace flashscope::explorer
