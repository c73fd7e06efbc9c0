// The device ceilings `explorer peak` measured (rows whose step is "peak:..."), looked up the way
// the views need them: a compute ceiling per instruction family and dtype, the best memory
// bandwidth, and a row's percentage of the ceiling of its own instruction family.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "explorer/model/row_set.hpp"

namespace flashscope::explorer {

// The tensor-core instruction a kernel's main loop issues.
enum class InstructionFamily { mma_sync, wgmma };
inline constexpr InstructionFamily kInstructionFamilies[] = {InstructionFamily::mma_sync,
                                                             InstructionFamily::wgmma};
std::string_view family_name(InstructionFamily family);  // "mma.sync", "wgmma"
std::string ceiling_step(InstructionFamily family);      // "peak:mma.sync", "peak:wgmma"

struct ComputeCeiling {
  InstructionFamily family;
  std::string device;
  std::string dtype;
  double tflops = 0;
  const ResultRow* row = nullptr;
};

struct MemoryCeiling {
  std::string name;  // "hbm.read", "hbm.copy", "smem.read" (on-chip)
  std::string device;
  double gbytes_per_s = 0;
  const ResultRow* row = nullptr;
};

// A throughput of results rather than FLOP: `explorer peak`'s ex2.f32 and ex2.f16x2 rows (10^12
// exponentials per second in their tflops column).
struct RateCeiling {
  std::string name;  // "ex2.f32", "ex2.f16x2"
  std::string device;
  double tera_per_s = 0;
  const ResultRow* row = nullptr;
};

class Ceilings {
 public:
  Ceilings() = default;
  // The fastest usable row (status ok, verdict not fail) per (device, ceiling, dtype).
  explicit Ceilings(const std::vector<const ResultRow*>& ceiling_rows);

  bool empty() const { return compute_.empty() && memory_.empty() && rates_.empty(); }
  const std::vector<ComputeCeiling>& compute() const { return compute_; }
  const std::vector<MemoryCeiling>& memory() const { return memory_; }
  const std::vector<RateCeiling>& rates() const { return rates_; }
  const RateCeiling* find_rate(std::string_view device, std::string_view name) const;

  const ComputeCeiling* find(std::string_view device, InstructionFamily family,
                             std::string_view dtype) const;
  // The highest compute ceiling of a device and dtype (whatever its family).
  const ComputeCeiling* highest(std::string_view device, std::string_view dtype) const;
  // The highest device-memory (hbm.*) bandwidth of a device: the roofline's memory roof. On-chip
  // bandwidths (smem.read) are in memory() but never the roof.
  const MemoryCeiling* best_memory(std::string_view device) const;

 private:
  std::vector<ComputeCeiling> compute_;
  std::vector<MemoryCeiling> memory_;
  std::vector<RateCeiling> rates_;
};

// The ceiling a row is measured against: its kernel's family (`family`, from its SASS) for steps;
// mma.sync for FA2 (FlashAttention-2 is written with mma.sync); the highest measured ceiling for
// cuDNN, whose kernels are not ours to read. Nullopt when the family is unknown or unmeasured.
struct CeilingShare {
  const ComputeCeiling* ceiling = nullptr;
  double percent = 0;  // row TFLOP/s / ceiling TFLOP/s · 100
};
std::optional<CeilingShare> share_of_ceiling(const Ceilings& ceilings, const ResultRow& row,
                                             std::optional<InstructionFamily> family);

// The softmax's share of the MUFU: a row's exponentials per second (one per kept score:
// `tflops` × softmax_exponentials / matmul_flops of its problem) against the device's ex2.f32
// ceiling (the steps' softmax issues ex2.approx.ftz.f32), in percent. `tflops` may be a harmonic
// mean over N (the ratio does not depend on N). Nullopt without that ceiling.
std::optional<double> ex2_share_percent(const Ceilings& ceilings, const ResultRow& row,
                                        double tflops);

// The shared-memory data stage's share: wavefronts per second (CUPTI's
// l1tex__data_pipe_lsu_wavefronts_mem_shared.sum: every LDS/LDSM/STS/STSM and every wgmma operand
// read from SMEM, one wavefront per bank-conflict-free 128-byte pass, more where banks conflict)
// against the device's smem.read ceiling counted in the same unit (its conflict-free 128-bit
// loads move 128 bytes per wavefront), in percent. Counts are per launch and do not depend on the
// clock, so the row's median time gives the rate. Nullopt without the metric, a positive time or
// that ceiling.
inline constexpr const char* kSharedWavefrontsMetric =
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum";
inline constexpr double kBytesPerSharedWavefront = 128.0;
std::optional<double> smem_share_percent(const Ceilings& ceilings, const ResultRow& row);
// The views' shared-memory share of a step: the first of `rows` with a share that measured the
// same kernel on the same problem kind as `like` (device, step, config, dtype, d_head, mask,
// pass; any N and any run), or nullptr. The wavefronts are counted only in runs that asked CUPTI
// for them, which are rarely the run a view shows, and a kernel's count per FLOP does not depend
// on the run.
const ResultRow* smem_counted_row(const Ceilings& ceilings,
                                  const std::vector<const ResultRow*>& rows, const ResultRow& like);

}  // namespace flashscope::explorer
