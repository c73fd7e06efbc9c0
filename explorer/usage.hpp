// What every `explorer` mode shares about its command line: problems are collected in one
// validation pass before any device is touched or file written, and reported together, each
// naming the value and the rule, with exit code 2; paths are checked the same way in every mode;
// output files are written whole or not at all (docs/explorer.md, "Command-line conventions").
#pragma once

#include <filesystem>
#include <fstream>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flashscope::cli {

// The exit code of every usage error, whichever layer finds it (CLI11 or a mode's checks).
inline constexpr int kUsageExitCode = 2;

// Several usage problems at once: what() joins them with line breaks, problems() lists them.
class UsageError : public std::invalid_argument {
 public:
  explicit UsageError(std::vector<std::string> problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

// The problems one validation pass finds.
class UsageProblems {
 public:
  void add(std::string problem);
  // Runs `check`; a std::invalid_argument it throws (a UsageError: each of its problems) is added
  // instead of propagated, so the checks after it still run.
  template <typename Check>
  void check(Check&& check) {
    try {
      check();
    } catch (const UsageError& error) {
      for (const std::string& problem : error.problems())
        add(problem);
    } catch (const std::invalid_argument& error) {
      add(error.what());
    }
  }
  bool empty() const { return problems_.empty(); }
  const std::vector<std::string>& all() const { return problems_; }
  // Throws a UsageError holding every problem, if there is one.
  void throw_if_any() const;
  // Prints each problem as "<prefix>: <problem>" (a multi-line problem indented), then, when
  // there are several, how many; returns kUsageExitCode.
  int report(std::ostream& err, const std::string& prefix) const;

 private:
  std::vector<std::string> problems_;
};

// "<option>: '<path>' does not exist" and the like for a file the command reads: it must exist,
// be a regular file (or a pipe/device) and be readable. nullopt when it is fine.
std::optional<std::string> input_file_problem(const std::string& option, const std::string& path);
// Likewise for a folder the command reads.
std::optional<std::string> input_directory_problem(const std::string& option,
                                                   const std::string& path);
// For a file the command will write: its folder must exist and be writable, and the path must not
// be a folder. nullopt when it is fine.
std::optional<std::string> output_file_problem(const std::string& option, const std::string& path);

// For a file written through "<path>.partial" (AtomicOutputFile): output_file_problem, and the
// partial file must not exist, since it is no file of this run (an interrupted sweep keeps its
// measured rows there): "--output: 'all.csv.partial' exists, ...; move or delete it first".
std::optional<std::string> atomic_output_problem(const std::string& option,
                                                 const std::string& path);
// The second half alone: nullopt unless "<path>.partial" exists.
std::optional<std::string> partial_file_problem(const std::string& option, const std::string& path);

// A file written whole or not at all: the text goes to "<path>.partial" in the same folder
// (so the rename stays on one file system) and commit() renames it over `path`. Destroyed
// without commit() (a failure, an exception), it removes the partial file unless keep_partial()
// was called, and `path` keeps whatever it held before.
// The partial file is created anew (O_EXCL): one that exists already is no file of this run, and
// the constructor throws (naming it) instead of overwriting it.
class AtomicOutputFile {
 public:
  explicit AtomicOutputFile(std::string path);  // throws std::runtime_error if it cannot open
  ~AtomicOutputFile();
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  std::ostream& stream() { return out_; }
  const std::string& path() const { return path_; }
  const std::string& partial_path() const { return partial_path_; }
  // Flushes, closes and renames; throws std::runtime_error (the partial file removed) on failure.
  void commit();
  // Leave the partial file where it is (an interrupted sweep's finished rows).
  void keep_partial();

 private:
  std::string path_;
  std::string partial_path_;
  std::ofstream out_;
  bool done_ = false;
};

}  // namespace flashscope::cli
