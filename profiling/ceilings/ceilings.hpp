// The device's ceilings (`explorer peak`): what one instruction family reaches when a kernel does
// nothing else. Each ceiling becomes a results row whose step column names it
// (docs/csv-schema.md, "Ceiling rows"):
//
//   peak:mma.sync  mma.sync.m16n8k16, fp32 accumulate (steps 1–16)       TFLOP/s, per dtype
//   peak:wgmma     wgmma.mma_async m64n256k16, SMEM operands (sm_90a)     TFLOP/s, per dtype
//   peak:hbm.read  a streaming read of a buffer 8x the L2 (at least 1 GiB)  GB/s
//   peak:hbm.copy  a streaming copy of such a buffer (bytes read + written)  GB/s
//   peak:ex2.f32   ex2.approx.ftz.f32 throughput (MUFU), the softmax's exponential
//                  10^12 results/s in `tflops`
//   peak:ex2.f16x2 ex2.approx.f16x2, two results per instruction      10^12 results/s in `tflops`
//   peak:smem.read ld.shared.v4 (128-bit), conflict-free                  GB/s
//
// Every benchmark checks its result (the tensor-core accumulators hold a known exact value, the
// read sum and the copy are verified, the ex2 chains reach their fixed point, every thread's
// shared-memory sum is compared), so a row's verdict says the instructions really ran; ex2 and
// shared-memory rows also fail when the rate per SM and clock is beyond any sm_80..sm_90 device.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/config.hpp"
#include "profiling/results/results.hpp"
#include "profiling/timing.hpp"

namespace flashscope {

// The benchmark names --only takes: "mma.sync", "wgmma", "hbm", "ex2", "smem".
const std::vector<std::string>& ceiling_benchmarks();
// The same, comma-separated, for messages: "mma.sync, wgmma, hbm, ex2, smem".
std::string ceiling_benchmark_list();

struct CeilingOptions {
  int device = 0;
  std::vector<std::string> benchmarks = ceiling_benchmarks();
  std::vector<DType> dtypes = {DType::FP16, DType::BF16};
  TimingSettings timing{5, 20, 10, 200, CacheMode::warm};
  // Work per launch relative to the default (about 5 ms on an H100); tests use less.
  double work_scale = 1.0;
  std::string run_id;  // the rows' run_id; empty: "<host> <UTC start>", as a sweep's
  std::optional<int> locked_sm_clock_mhz;  // the SM clock the caller locked, recorded per row
};

// Throws std::invalid_argument naming the option at fault.
void validate_ceiling_options(const CeilingOptions& options);

// Measures every requested ceiling on `options.device`, calling `on_row` with each row as soon as
// it is measured (or skipped, or faulted), and returns them all. Throws NoCudaDevice.
std::vector<ResultRow> measure_ceilings(const CeilingOptions& options,
                                        const std::function<void(const ResultRow&)>& on_row = {});

}  // namespace flashscope
