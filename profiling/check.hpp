// `explorer check`: one kernel, one shape, the §1.4 verdict and the error against the fp32
// reference, optionally with every tensor dumped as .npy for offline inspection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/config.hpp"
#include "kernels/common/reference.hpp"
#include "kernels/common/registry.hpp"

namespace flashscope {

struct CheckRequest {
  int step = 0;
  std::optional<KernelConfig> config;  // default: the step's built config for `dtype`
  std::optional<DType> dtype;          // default: the config's, else fp16
  // The seed's unit-test shape (spec §1.2); shape.causal: the causal problem (`--causal`),
  // checked against the references with the mask.
  AttentionShape shape{16, 2048, 16, 128};
  std::uint64_t seed = 0;
  float input_scale = 1.0f;  // inputs ~ N(0, input_scale²)
  std::string dump_dir;      // empty: no dump
  int device = 0;
};

struct CheckReport {
  const KernelEntry* kernel = nullptr;
  DType dtype = DType::FP16;
  AttentionShape shape;
  std::uint64_t seed = 0;
  CorrectnessVerdict verdict;
  std::vector<std::string> dumped_files;
};

// The kernel a request names. Throws std::invalid_argument (bad shape, dtype contradicting the
// config, several candidates) or KernelLookupError (not built, with the closest built configs).
const KernelEntry& resolve_check_kernel(const CheckRequest& request,
                                        const KernelRegistry& registry);

// The shape, dtype and step rules of launch validation, which need no GPU: throws
// LaunchValidationError (a std::invalid_argument) naming the rule the shape breaks.
void validate_request_shape(const KernelEntry& entry, const AttentionShape& shape);

// The files a dump writes into CheckRequest::dump_dir, in this order.
const std::vector<std::string>& check_dump_file_names();

// Runs the check on the device. Throws NoCudaDevice, LaunchValidationError, CudaError.
CheckReport run_check(const CheckRequest& request);

}  // namespace flashscope
