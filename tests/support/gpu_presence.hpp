// Whether a GPU test executable runs, is skipped or fails, from what CUDA and the operating
// system each say. A machine without a GPU skips (ctest counts the test as skipped, never as
// passed); a machine whose driver lists GPUs that CUDA cannot use fails, because a broken or
// mismatched driver would otherwise turn every GPU test into a skip that nobody reads.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace flashscope::testing {

// ctest's SKIP_RETURN_CODE for GPU tests (tests/CMakeLists.txt).
inline constexpr int kSkipExitCode = 77;

struct GpuEnvironment {
  cudaError_t device_count_status = cudaSuccess;  // cudaGetDeviceCount's result
  int device_count = 0;
  std::vector<std::string> system_gpus;  // what the driver lists, whatever CUDA says
  std::string cuda_visible_devices;      // the variable's value; empty when unset
  bool cuda_visible_devices_set = false;
  bool gpu_required = false;   // FLASHSCOPE_REQUIRE_GPU=1 (scripts/gpu_host.sh sets it)
  bool driver_present = true;  // nvidia_driver_present() (kernels/common/cuda_check.hpp)
};

enum class GpuTestAction { run, skip, fail };

struct GpuTestDecision {
  GpuTestAction action = GpuTestAction::run;
  std::string message;  // "SKIPPED: ..." or "FAILED: ..." (empty for run)
};

GpuTestDecision decide_gpu_tests(const GpuEnvironment& environment);

// The GPUs the NVIDIA kernel driver lists (/proc/driver/nvidia/gpus), else the "GPU n: ..." lines
// of `nvidia-smi -L`; empty on a machine without either.
std::vector<std::string> list_system_gpus();

// The environment of this process: cudaGetDeviceCount, the variables, and list_system_gpus
// when CUDA found no device.
GpuEnvironment current_gpu_environment();

// A test case that had nothing to compare here (no reference built, a graph form this cuDNN
// lacks) records why; when no check failed, the GPU test main then prints each reason after
// "SKIPPED:" and exits with kSkipExitCode, so the test is counted as skipped, not passed.
void skip_test_case(const std::string& reason);
const std::vector<std::string>& skipped_test_cases();

}  // namespace flashscope::testing
