// The SASS the desktop explorer shows: one artifact (find_sass_source), its listings parsed on
// first use and kept, and the comparison of one kernel with another that the SASS tab draws.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "explorer/sass/sass_analysis.hpp"
#include "explorer/sass/sass_artifact.hpp"

namespace flashscope::sass {

// Step N's kernel against step N-1's (or any two kernels of one architecture).
struct SassComparison {
  const SassKernelRecord* before = nullptr;
  const SassKernelRecord* after = nullptr;
  std::string relation;  // how `before` was chosen
  OpcodeGrouping grouping = OpcodeGrouping::opcode;
  std::vector<OpcodeChange> changes;  // largest |delta| first
  int total_before = 0;
  int total_after = 0;
  std::vector<std::string> lines_before;  // normalized instructions
  std::vector<std::string> lines_after;
  LineDiff diff;
  std::optional<SassLoop> loop_before;  // main loops, as instruction indices
  std::optional<SassLoop> loop_after;
  const SassFunction* function_before = nullptr;
  const SassFunction* function_after = nullptr;
};

class SassLibrary {
 public:
  SassLibrary() = default;
  explicit SassLibrary(SassSource source);

  const SassArtifact* artifact() const { return source_.artifact ? &*source_.artifact : nullptr; }
  const std::string& note() const { return source_.note; }
  bool has_listings() const { return artifact() != nullptr && artifact()->has_listings(); }

  // The parsed listing of `record`; nullptr when it has none or it cannot be read (then
  // problem(record) says why).
  const SassFunction* function(const SassKernelRecord& record);
  const OpcodeCounts* counts(const SassKernelRecord& record, OpcodeGrouping grouping);
  std::string problem(const SassKernelRecord& record) const;

  // The kernel standing for a measured row: the same step, config and architecture when the
  // artifact has it (`exact`), else the step's default kernel in the row's dtype (fp16 when the
  // row has none).
  struct Match {
    const SassKernelRecord* record = nullptr;
    bool exact = false;
  };
  std::optional<Match> kernel_for(int step, const std::optional<KernelConfig>& config,
                                  std::optional<DType> dtype, std::string_view arch) const;

  // Every opcode (or mnemonic) of every listing of `arch`, most frequent overall first. Parses
  // every listing of that architecture on first use.
  std::vector<std::string> names(std::string_view arch, OpcodeGrouping grouping);

  // `after` against `before`; cached, so a view may ask every frame. nullptr when either listing
  // is missing.
  const SassComparison* compare(const SassKernelRecord& before, const SassKernelRecord& after,
                                const std::string& relation, OpcodeGrouping grouping);

 private:
  struct Loaded {
    std::optional<SassFunction> function;
    std::string problem;
    std::optional<OpcodeCounts> by_opcode;
    std::optional<OpcodeCounts> by_mnemonic;
  };
  Loaded& load(const SassKernelRecord& record);

  SassSource source_;
  std::map<const SassKernelRecord*, Loaded> loaded_;
  std::map<std::tuple<const SassKernelRecord*, const SassKernelRecord*, OpcodeGrouping>,
           std::unique_ptr<SassComparison>>
      comparisons_;
};

}  // namespace flashscope::sass
