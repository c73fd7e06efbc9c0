#include "explorer/model/ceilings.hpp"

#include "kernels/common/problem.hpp"

namespace flashscope::explorer {

std::string_view family_name(InstructionFamily family) {
  return family == InstructionFamily::mma_sync ? "mma.sync" : "wgmma";
}

std::string ceiling_step(InstructionFamily family) {
  return std::string(kCeilingStepPrefix) + std::string(family_name(family));
}

Ceilings::Ceilings(const std::vector<const ResultRow*>& ceiling_rows) {
  for (const ResultRow* row : ceiling_rows) {
    if (!row->status.ok() || row->verdict == Verdict::fail) continue;
    const std::string& name = row->subject.benchmark();
    if (row->gbytes_per_s && *row->gbytes_per_s > 0) {
      MemoryCeiling* existing = nullptr;
      for (MemoryCeiling& ceiling : memory_)
        if (ceiling.device == row->device && ceiling.name == name) existing = &ceiling;
      if (existing == nullptr)
        memory_.push_back({name, row->device, *row->gbytes_per_s, row});
      else if (*row->gbytes_per_s > existing->gbytes_per_s)
        *existing = {name, row->device, *row->gbytes_per_s, row};
      continue;
    }
    if (name.starts_with("ex2.")) {
      if (!(row->tflops > 0)) continue;
      RateCeiling* existing = nullptr;
      for (RateCeiling& ceiling : rates_)
        if (ceiling.device == row->device && ceiling.name == name) existing = &ceiling;
      if (existing == nullptr)
        rates_.push_back({name, row->device, row->tflops, row});
      else if (row->tflops > existing->tera_per_s)
        *existing = {name, row->device, row->tflops, row};
      continue;
    }
    for (const InstructionFamily family : kInstructionFamilies) {
      if (name != family_name(family) || !(row->tflops > 0)) continue;
      ComputeCeiling* existing = nullptr;
      for (ComputeCeiling& ceiling : compute_)
        if (ceiling.device == row->device && ceiling.family == family &&
            ceiling.dtype == dtype_text(*row))
          existing = &ceiling;
      const ComputeCeiling candidate{family, row->device, dtype_text(*row), row->tflops, row};
      if (existing == nullptr)
        compute_.push_back(candidate);
      else if (row->tflops > existing->tflops)
        *existing = candidate;
    }
  }
}

const ComputeCeiling* Ceilings::find(std::string_view device, InstructionFamily family,
                                     std::string_view dtype) const {
  for (const ComputeCeiling& ceiling : compute_)
    if (ceiling.device == device && ceiling.family == family && ceiling.dtype == dtype)
      return &ceiling;
  return nullptr;
}

const ComputeCeiling* Ceilings::highest(std::string_view device, std::string_view dtype) const {
  const ComputeCeiling* best = nullptr;
  for (const ComputeCeiling& ceiling : compute_)
    if (ceiling.device == device && ceiling.dtype == dtype &&
        (!best || ceiling.tflops > best->tflops))
      best = &ceiling;
  return best;
}

const MemoryCeiling* Ceilings::best_memory(std::string_view device) const {
  const MemoryCeiling* best = nullptr;
  for (const MemoryCeiling& ceiling : memory_)
    if (ceiling.device == device && ceiling.name.starts_with("hbm.") &&
        (!best || ceiling.gbytes_per_s > best->gbytes_per_s))
      best = &ceiling;
  return best;
}

const RateCeiling* Ceilings::find_rate(std::string_view device, std::string_view name) const {
  for (const RateCeiling& ceiling : rates_)
    if (ceiling.device == device && ceiling.name == name) return &ceiling;
  return nullptr;
}

std::optional<double> ex2_share_percent(const Ceilings& ceilings, const ResultRow& row,
                                        double tflops) {
  const RateCeiling* ceiling = ceilings.find_rate(row.device, "ex2.f32");
  const double flops = matmul_flops(row.problem);
  if (ceiling == nullptr || !(tflops > 0) || !(flops > 0)) return std::nullopt;
  return tflops * (softmax_exponentials(row.problem) / flops) / ceiling->tera_per_s * 100.0;
}

std::optional<double> smem_share_percent(const Ceilings& ceilings, const ResultRow& row) {
  const auto wavefronts = row.extra_metrics.find(kSharedWavefrontsMetric);
  if (wavefronts == row.extra_metrics.end() || !(wavefronts->second >= 0) || !(row.median_ms > 0) ||
      !row.status.ok())
    return std::nullopt;
  const MemoryCeiling* ceiling = nullptr;
  for (const MemoryCeiling& candidate : ceilings.memory())
    if (candidate.device == row.device && candidate.name == "smem.read") ceiling = &candidate;
  if (ceiling == nullptr || !(ceiling->gbytes_per_s > 0)) return std::nullopt;
  const double bytes_per_s = wavefronts->second * kBytesPerSharedWavefront / (row.median_ms * 1e-3);
  return bytes_per_s / (ceiling->gbytes_per_s * 1e9) * 100.0;
}

const ResultRow* smem_counted_row(const Ceilings& ceilings,
                                  const std::vector<const ResultRow*>& rows,
                                  const ResultRow& like) {
  for (const ResultRow* row : rows)
    if (row->device == like.device && row->subject == like.subject && row->config == like.config &&
        row->problem.dtype == like.problem.dtype && row->problem.d_head == like.problem.d_head &&
        row->problem.causal == like.problem.causal && row->problem.pass == like.problem.pass &&
        smem_share_percent(ceilings, *row))
      return row;
  return nullptr;
}

std::optional<CeilingShare> share_of_ceiling(const Ceilings& ceilings, const ResultRow& row,
                                             std::optional<InstructionFamily> family) {
  const ComputeCeiling* ceiling = nullptr;
  const std::string dtype = dtype_text(row);
  const auto baseline = row.subject.which_baseline();
  if (baseline == Baseline::fa2)
    ceiling = ceilings.find(row.device, InstructionFamily::mma_sync, dtype);
  else if (baseline == Baseline::cudnn)
    ceiling = ceilings.highest(row.device, dtype);
  else if (family)
    ceiling = ceilings.find(row.device, *family, dtype);
  if (ceiling == nullptr || !(row.tflops > 0)) return std::nullopt;
  return CeilingShare{ceiling, row.tflops / ceiling->tflops * 100.0};
}

}  // namespace flashscope::explorer
