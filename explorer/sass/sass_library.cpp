#include "explorer/sass/sass_library.hpp"

#include <algorithm>

#include "explorer/sass/sass_selection.hpp"

namespace flashscope::sass {

SassLibrary::SassLibrary(SassSource source) : source_(std::move(source)) {}

SassLibrary::Loaded& SassLibrary::load(const SassKernelRecord& record) {
  const auto found = loaded_.find(&record);
  if (found != loaded_.end()) return found->second;
  Loaded& loaded = loaded_[&record];
  try {
    loaded.function = artifact()->load_function(record);
  } catch (const std::exception& error) {  // a missing or corrupt listing: shown, not fatal
    loaded.problem = error.what();
  }
  return loaded;
}

const SassFunction* SassLibrary::function(const SassKernelRecord& record) {
  if (artifact() == nullptr || record.listing.empty()) return nullptr;
  Loaded& loaded = load(record);
  return loaded.function ? &*loaded.function : nullptr;
}

const OpcodeCounts* SassLibrary::counts(const SassKernelRecord& record, OpcodeGrouping grouping) {
  const SassFunction* parsed = function(record);
  if (parsed == nullptr) return nullptr;
  Loaded& loaded = load(record);
  std::optional<OpcodeCounts>& cached =
      grouping == OpcodeGrouping::opcode ? loaded.by_opcode : loaded.by_mnemonic;
  if (!cached) cached = count_opcodes(*parsed, grouping);
  return &*cached;
}

std::string SassLibrary::problem(const SassKernelRecord& record) const {
  if (artifact() == nullptr) return note();
  if (record.listing.empty()) return "no listing: " + note();
  const auto found = loaded_.find(&record);
  return found == loaded_.end() ? std::string() : found->second.problem;
}

std::optional<SassLibrary::Match> SassLibrary::kernel_for(int step,
                                                          const std::optional<KernelConfig>& config,
                                                          std::optional<DType> dtype,
                                                          std::string_view arch) const {
  if (artifact() == nullptr) return std::nullopt;
  if (config)
    if (const SassKernelRecord* exact = artifact()->find(step, *config, arch))
      return Match{exact, true};
  const SassKernelRecord* fallback =
      default_kernel(*artifact(), step, arch, dtype.value_or(DType::FP16));
  if (fallback == nullptr) return std::nullopt;
  return Match{fallback, false};
}

std::vector<std::string> SassLibrary::names(std::string_view arch, OpcodeGrouping grouping) {
  std::map<std::string, long> totals;
  if (artifact() != nullptr)
    for (const SassKernelRecord& record : artifact()->kernels()) {
      if (record.arch != arch) continue;
      if (const OpcodeCounts* counts_of = counts(record, grouping))
        for (const auto& [name, count] : *counts_of)
          totals[name] += count;
    }
  std::vector<std::pair<std::string, long>> sorted(totals.begin(), totals.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> result;
  for (const auto& [name, total] : sorted)
    result.push_back(name);
  return result;
}

const SassComparison* SassLibrary::compare(const SassKernelRecord& before,
                                           const SassKernelRecord& after,
                                           const std::string& relation, OpcodeGrouping grouping) {
  const auto key = std::make_tuple(&before, &after, grouping);
  const auto found = comparisons_.find(key);
  if (found != comparisons_.end()) return found->second.get();
  const SassFunction* function_before = function(before);
  const SassFunction* function_after = function(after);
  if (function_before == nullptr || function_after == nullptr) return nullptr;

  auto comparison = std::make_unique<SassComparison>();
  comparison->before = &before;
  comparison->after = &after;
  comparison->relation = relation;
  comparison->grouping = grouping;
  comparison->function_before = function_before;
  comparison->function_after = function_after;
  const OpcodeCounts& counts_before = *counts(before, grouping);
  const OpcodeCounts& counts_after = *counts(after, grouping);
  comparison->changes = compare_counts(counts_before, counts_after);
  comparison->total_before = total_instructions(counts_before);
  comparison->total_after = total_instructions(counts_after);
  for (const SassInstruction& instruction : function_before->instructions)
    comparison->lines_before.push_back(normalize_instruction(instruction));
  for (const SassInstruction& instruction : function_after->instructions)
    comparison->lines_after.push_back(normalize_instruction(instruction));
  comparison->diff = diff_lines(comparison->lines_before, comparison->lines_after);
  comparison->loop_before = main_loop(*function_before);
  comparison->loop_after = main_loop(*function_after);
  return comparisons_.emplace(key, std::move(comparison)).first->second.get();
}

}  // namespace flashscope::sass
