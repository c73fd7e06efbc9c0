#include "explorer/model/result_files.hpp"

#include <algorithm>
#include <system_error>

namespace flashscope::explorer {

std::vector<std::string> find_result_csvs(const std::filesystem::path& directory) {
  std::vector<std::string> paths;
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error)) return paths;
  const auto options = std::filesystem::directory_options::skip_permission_denied;
  for (auto it = std::filesystem::recursive_directory_iterator(directory, options, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_regular_file(error) && it->path().extension() == ".csv")
      paths.push_back(it->path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::string short_file_label(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string parent = p.parent_path().filename().string();
  return parent.empty() ? p.filename().string() : parent + "/" + p.filename().string();
}

LoadOutcome load_result_files(const std::vector<std::string>& paths) {
  LoadOutcome outcome;
  for (const std::string& path : paths) {
    try {
      ResultFile file;
      file.path = path;
      file.label = short_file_label(path);
      file.rows = read_results_file(path);
      outcome.files.push_back(std::move(file));
    } catch (const std::exception& error) {
      // ResultsFormatError already names the file; anything else (I/O, allocation) may not.
      std::string message = error.what();
      if (message.find(path) == std::string::npos) message = path + ": " + message;
      outcome.problems.push_back(std::move(message));
    }
  }
  return outcome;
}

}  // namespace flashscope::explorer
