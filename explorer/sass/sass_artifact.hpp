// The SASS artifact the build writes (build/sass/) and a GPU host ships (results/<gpu>/sass/):
//
//   manifest.txt   "key: value" lines: commit, nvcc, disassembler, architectures, kernel_set, ...
//   kernels.tsv    one row per (step, config, arch): the kernel's entry function, ptxas's
//                  registers, barriers, stack and spill bytes, and its listing's instruction count
//   listings/sNN/<id>.<arch>.sass[.gz]   the listing of every function of that object and arch
//
// ptxas's numbers exist for every build; listings only where a CUDA 13 cuobjdump was found
// (manifest `disassembler: none` otherwise). docs/explorer.md describes the format.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "explorer/sass/sass_listing.hpp"
#include "kernels/common/config.hpp"

namespace flashscope::sass {

// A missing, unreadable or inconsistent artifact; the message names the file and the problem.
class SassArtifactError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SassKernelRecord {
  int step = 0;
  KernelConfig config{};
  std::string arch;      // "sm_80", "sm_90a"
  std::string function;  // mangled entry name
  int registers = 0;
  int barriers = 0;
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  std::optional<int> instructions;  // of the listing; absent without one
  std::string listing;              // relative to the artifact folder; empty without one
  // Not a column: set by SassArtifact::load. A backward step's instantiation compiles several
  // kernels (preprocess, the main flash_backward_kernel, postprocess), each a row of its own with
  // the same (step, config, arch); the entry kernel is the one the step is measured by (the
  // registry's kernel function): see is_entry_kernel_name. Every forward row is one.
  bool entry = true;
};

// Whether a kernel's (mangled) function name is a step's entry kernel: its demangled name, less
// namespaces and template arguments, starts with "flash_" (flash_forward_kernel,
// flash_forward_fp8_kernel, flash_backward_kernel), as every step's registered kernel does.
bool is_entry_kernel_name(const std::string& function);

using SassManifest = std::map<std::string, std::string, std::less<>>;

// Column names of kernels.tsv, in order.
const std::vector<std::string>& kernel_index_columns();

std::string format_kernel_index(const std::vector<SassKernelRecord>& records);
// Throws SassArtifactError naming `source_name`, the line and the column.
std::vector<SassKernelRecord> parse_kernel_index(std::string_view text,
                                                 const std::string& source_name);

std::string format_manifest(const SassManifest& manifest);
SassManifest parse_manifest(std::string_view text, const std::string& source_name);

// Whole-file text I/O; a path ending in ".gz" is gzip-compressed (throws SassArtifactError when
// this build has no zlib). write_text_file creates missing parent folders.
std::string read_text_file(const std::filesystem::path& path);
void write_text_file(const std::filesystem::path& path, std::string_view text);
bool have_gzip();  // whether this build reads and writes .gz listings
// The file name ending a listing gets in this build: ".sass.gz" with zlib, else ".sass".
std::string_view listing_extension();

class SassArtifact {
 public:
  // Reads manifest.txt and kernels.tsv of `directory`; throws SassArtifactError.
  static SassArtifact load(const std::filesystem::path& directory);

  const std::filesystem::path& directory() const { return directory_; }
  const SassManifest& manifest() const { return manifest_; }
  std::string manifest_value(std::string_view key) const;  // "" when absent
  const std::vector<SassKernelRecord>& kernels() const { return kernels_; }
  bool has_listings() const;  // any kernel has a listing

  // One line for people: "results/h200/sass: commit 1a2b3c, nvcc 13.0.88, cuobjdump 13.0, ...";
  // a merged artifact names each part's steps, commit and host instead of one commit and host.
  std::string describe() const;

  std::vector<std::string> architectures() const;  // distinct, sorted
  std::vector<int> steps() const;                  // distinct, ascending
  // The entry kernel of (step, config, arch), or nullptr.
  const SassKernelRecord* find(int step, const KernelConfig& config, std::string_view arch) const;
  // The step's entry kernels on `arch`, one per config, in kernels.tsv's order.
  std::vector<const SassKernelRecord*> kernels_of(int step, std::string_view arch) const;
  // Every kernel of the instantiation (step, config, arch), its entry kernel first: one for a
  // forward step, three for a backward one.
  std::vector<const SassKernelRecord*> functions_of(int step, const KernelConfig& config,
                                                    std::string_view arch) const;

  // The kernel's function from its listing. Throws SassArtifactError when the record has no
  // listing, the file is missing, or the listing lacks the function.
  SassFunction load_function(const SassKernelRecord& record) const;

 private:
  std::filesystem::path directory_;
  SassManifest manifest_;
  std::vector<SassKernelRecord> kernels_;
};

// Where `explorer sass` and the GUI read SASS from, and why.
struct SassSource {
  std::optional<SassArtifact> artifact;
  std::string note;  // which artifact and why it was chosen, or why there is none
};

// The choice, in order: `explicit_directory` when given (an error there is fatal: throws); this
// build's own artifact when it has listings; else the newest shipped one under
// `results_directory`/*/sass (by manifest created_utc); else this build's ptxas-only artifact.
SassSource find_sass_source(const std::filesystem::path& explicit_directory,
                            const std::filesystem::path& build_directory,
                            const std::filesystem::path& results_directory);

// Where this binary's build writes its artifact and where the shipped results are (set by the
// build); empty when unknown.
std::filesystem::path build_sass_directory();
std::filesystem::path shipped_results_directory_for_sass();

}  // namespace flashscope::sass
