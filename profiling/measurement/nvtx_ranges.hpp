// NVTX3 ranges around every measured launch, in the `flashscope` domain, so Nsight Systems shows
// what ran and Nsight Compute can pick one measurement. The interleaved engine (interleaved.hpp)
// names each range after its contender, the sweep after the row ("26 (FP16, ...) fp16 H=32 kv=8
// N=4096 B=8"); explorer peak and time_launches use measurement_range_name:
//   ncu --nvtx --nvtx-include "flashscope@7 (FP16, 128, 64, 64, 4): async+...+opt_softmax N=4096/"
#pragma once

#include <nvtx3/nvtx3.hpp>

#include <string>

namespace flashscope {

struct FlashscopeNvtxDomain {
  static constexpr char const* name{"flashscope"};
};

using MeasurementRange = nvtx3::scoped_range_in<FlashscopeNvtxDomain>;
using MeasurementRangeName = nvtx3::registered_string_in<FlashscopeNvtxDomain>;

// "<step> <short form> N=<n>" for kernels ("7 (FP16, 128, 64, 64, 4): async+... N=4096"); a
// reference has no config, so its dtype stands in: "fa2 FP16 N=4096".
inline std::string measurement_range_name(const std::string& step,
                                          const std::string& config_or_dtype, int seq_len) {
  return step + " " + config_or_dtype + " N=" + std::to_string(seq_len);
}

}  // namespace flashscope
