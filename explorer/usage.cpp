#include "explorer/usage.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <system_error>

namespace flashscope::cli {

namespace {

std::string join_lines(const std::vector<std::string>& problems) {
  std::string text;
  for (const std::string& problem : problems)
    text += (text.empty() ? "" : "\n") + problem;
  return text;
}

}  // namespace

UsageError::UsageError(std::vector<std::string> problems)
    : std::invalid_argument(join_lines(problems)), problems_(std::move(problems)) {}

void UsageProblems::add(std::string problem) {
  problems_.push_back(std::move(problem));
}

void UsageProblems::throw_if_any() const {
  if (!problems_.empty()) throw UsageError(problems_);
}

int UsageProblems::report(std::ostream& err, const std::string& prefix) const {
  for (const std::string& problem : problems_) {
    err << prefix << ": ";
    for (const char c : problem) {
      err << c;
      if (c == '\n') err << "  ";
    }
    err << "\n";
  }
  if (problems_.size() > 1)
    err << prefix << ": " << problems_.size() << " problems with the arguments; nothing was done\n";
  return kUsageExitCode;
}

std::optional<std::string> input_file_problem(const std::string& option, const std::string& path) {
  const std::string named = option + ": '" + path + "'";
  if (path.empty()) return option + ": the path is empty";
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status)) return named + " does not exist";
  if (std::filesystem::is_directory(status)) return named + " is a folder, not a file";
  if (::access(path.c_str(), R_OK) != 0) return named + " cannot be read (permission denied)";
  return std::nullopt;
}

std::optional<std::string> input_directory_problem(const std::string& option,
                                                   const std::string& path) {
  const std::string named = option + ": '" + path + "'";
  if (path.empty()) return option + ": the path is empty";
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status)) return named + ": the folder does not exist";
  if (!std::filesystem::is_directory(status)) return named + " is a file, not a folder";
  if (::access(path.c_str(), R_OK | X_OK) != 0)
    return named + ": the folder cannot be read (permission denied)";
  return std::nullopt;
}

std::optional<std::string> output_file_problem(const std::string& option, const std::string& path) {
  const std::string named = option + ": '" + path + "'";
  if (path.empty()) return option + ": the path is empty";
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    return named + " is a folder; name a file to write";
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (!std::filesystem::is_directory(folder, error))
    return named + ": the folder '" + folder.string() + "' does not exist";
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return named + ": the folder '" + folder.string() + "' is not writable";
  return std::nullopt;
}

namespace {

std::string partial_exists_message(const std::string& partial) {
  return "'" + partial +
         "' exists, left by an earlier run that did not finish (an interrupted sweep keeps its "
         "measured rows there); move or delete it first: this command writes its output "
         "through that file and would overwrite it";
}

}  // namespace

std::optional<std::string> partial_file_problem(const std::string& option,
                                                const std::string& path) {
  std::error_code error;
  const std::string partial = path + ".partial";
  if (std::filesystem::exists(std::filesystem::symlink_status(partial, error)))
    return option + ": " + partial_exists_message(partial);
  return std::nullopt;
}

std::optional<std::string> atomic_output_problem(const std::string& option,
                                                 const std::string& path) {
  if (auto problem = output_file_problem(option, path)) return problem;
  return partial_file_problem(option, path);
}

AtomicOutputFile::AtomicOutputFile(std::string path)
    : path_(std::move(path)), partial_path_(path_ + ".partial") {
  // Created here or not at all: an existing partial file is another run's.
  const int fd = ::open(partial_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    if (errno == EEXIST) throw std::runtime_error(partial_exists_message(partial_path_));
    throw std::runtime_error("cannot open " + partial_path_ + " for writing (" +
                             std::strerror(errno) + ")");
  }
  ::close(fd);
  out_.open(partial_path_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    std::remove(partial_path_.c_str());
    throw std::runtime_error("cannot open " + partial_path_ + " for writing");
  }
}

AtomicOutputFile::~AtomicOutputFile() {
  if (done_) return;
  out_.close();
  std::remove(partial_path_.c_str());
}

void AtomicOutputFile::commit() {
  out_.flush();
  const bool written = static_cast<bool>(out_);
  out_.close();
  done_ = true;
  if (!written || out_.fail()) {
    std::remove(partial_path_.c_str());
    throw std::runtime_error("writing " + partial_path_ + " failed");
  }
  if (std::rename(partial_path_.c_str(), path_.c_str()) != 0) {
    std::remove(partial_path_.c_str());
    throw std::runtime_error("cannot rename " + partial_path_ + " to " + path_);
  }
}

void AtomicOutputFile::keep_partial() {
  out_.flush();
  out_.close();
  done_ = true;
}

}  // namespace flashscope::cli
