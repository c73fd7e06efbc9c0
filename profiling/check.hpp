// `explorer check`: one kernel, one shape, the §1.4 verdict and the error against the fp32
// reference, optionally with every tensor dumped as .npy for offline inspection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/config.hpp"
#include "kernels/common/problem.hpp"
#include "kernels/common/reference.hpp"
#include "kernels/common/registry.hpp"

namespace flashscope {

struct CheckRequest {
  int step = 0;
  // Default: the step's built config for the problem's dtype and d_head. A config given must
  // have the problem's dtype and d_head (explorer check takes both from it).
  std::optional<KernelConfig> config;
  // The seed's unit-test shape (spec §1.2) by default; any problem the step runs (the causal mask,
  // grouped K/V heads), checked against the references of that problem.
  Problem problem = multi_head_problem(DType::FP16, 16, 2048, 16, 128);
  std::uint64_t seed = 0;
  float input_scale = 1.0f;  // inputs ~ N(0, input_scale²)
  std::string dump_dir;      // empty: no dump
  int device = 0;
};

struct CheckReport {
  const KernelEntry* kernel = nullptr;
  Problem problem;
  std::uint64_t seed = 0;
  CorrectnessVerdict verdict;
  std::vector<std::string> dumped_files;
};

// The kernel a request names. Throws std::invalid_argument (a bad problem, a config of another
// dtype or d_head, several candidates) or KernelLookupError (not built, with the closest built
// configs).
const KernelEntry& resolve_check_kernel(const CheckRequest& request,
                                        const KernelRegistry& registry);

// The rules of launch validation that need no GPU (launch_refusal): throws LaunchValidationError
// (a std::invalid_argument) naming the rule the problem breaks.
void validate_request_problem(const KernelEntry& entry, const Problem& problem);

// The files a dump writes into CheckRequest::dump_dir, in this order.
const std::vector<std::string>& check_dump_file_names();

// Runs the check on the device. Throws NoCudaDevice, LaunchValidationError, CudaError.
CheckReport run_check(const CheckRequest& request);

}  // namespace flashscope
