// The GPU test main's decision without a GPU: each combination of what CUDA says and what the
// driver lists, and the message each one prints.
#include <doctest/doctest.h>

#include <string>

#include "kernels/common/cuda_check.hpp"
#include "tests/support/gpu_presence.hpp"

using namespace flashscope::testing;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

GpuEnvironment no_gpu_anywhere() {
  GpuEnvironment environment;
  environment.device_count_status = cudaErrorInsufficientDriver;  // no driver installed
  return environment;
}

}  // namespace

TEST_CASE("a usable device runs the tests") {
  GpuEnvironment environment;
  environment.device_count = 1;
  environment.system_gpus = {"0000:01:00.0 NVIDIA H200"};
  CHECK(decide_gpu_tests(environment).action == GpuTestAction::run);
  environment.gpu_required = true;
  CHECK(decide_gpu_tests(environment).action == GpuTestAction::run);
}

TEST_CASE("a machine without a GPU skips, naming CUDA's reason") {
  const GpuTestDecision decision = decide_gpu_tests(no_gpu_anywhere());
  CHECK(decision.action == GpuTestAction::skip);
  CHECK(decision.message ==
        "SKIPPED: no CUDA device (cudaGetDeviceCount: cudaErrorInsufficientDriver: CUDA driver "
        "version is insufficient for CUDA runtime version)");
  GpuEnvironment none;
  none.device_count_status = cudaErrorNoDevice;
  CHECK(decide_gpu_tests(none).action == GpuTestAction::skip);
  GpuEnvironment zero;  // success with zero devices
  CHECK(decide_gpu_tests(zero).action == GpuTestAction::skip);
  CHECK(contains(decide_gpu_tests(zero).message, "cudaGetDeviceCount found 0 devices"));
}

TEST_CASE("a machine without any NVIDIA driver is said to have none") {
  // The runtime calls that cudaErrorInsufficientDriver, "CUDA driver version is insufficient".
  GpuEnvironment no_driver = no_gpu_anywhere();
  no_driver.driver_present = false;
  const GpuTestDecision decision = decide_gpu_tests(no_driver);
  CHECK(decision.action == GpuTestAction::skip);
  CHECK(decision.message ==
        "SKIPPED: no CUDA device (no NVIDIA driver on this machine; cudaGetDeviceCount: "
        "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime "
        "version)");
  // What the library says on this machine, whichever it is.
  const std::string reason = flashscope::cuda_unavailable_reason(cudaErrorInsufficientDriver);
  CHECK(contains(reason, "cudaGetDeviceCount returned cudaErrorInsufficientDriver"));
  CHECK(contains(reason, "no NVIDIA driver on this machine") !=
        flashscope::nvidia_driver_present());
  CHECK_FALSE(contains(flashscope::cuda_unavailable_reason(cudaErrorInvalidValue), "no NVIDIA"));
}

TEST_CASE("GPUs the driver lists but CUDA cannot use fail instead of skipping") {
  GpuEnvironment broken = no_gpu_anywhere();
  broken.system_gpus = {"0000:01:00.0 NVIDIA H200", "0000:02:00.0 NVIDIA H200"};
  const GpuTestDecision decision = decide_gpu_tests(broken);
  CHECK(decision.action == GpuTestAction::fail);
  CHECK(contains(decision.message,
                 "FAILED: the driver lists 2 GPU(s) (0000:01:00.0 NVIDIA H200; "
                 "0000:02:00.0 NVIDIA H200) but CUDA cannot use them"));
  CHECK(contains(decision.message, "cudaErrorInsufficientDriver"));
  // A driver error other than "no device" fails even with CUDA_VISIBLE_DEVICES set.
  broken.cuda_visible_devices_set = true;
  broken.cuda_visible_devices = "0";
  CHECK(decide_gpu_tests(broken).action == GpuTestAction::fail);
}

TEST_CASE("CUDA_VISIBLE_DEVICES hiding every GPU is a skip that says so") {
  GpuEnvironment hidden;
  hidden.device_count_status = cudaErrorNoDevice;
  hidden.system_gpus = {"0000:01:00.0 NVIDIA H200"};
  hidden.cuda_visible_devices_set = true;
  hidden.cuda_visible_devices = "-1";
  const GpuTestDecision decision = decide_gpu_tests(hidden);
  CHECK(decision.action == GpuTestAction::skip);
  CHECK(decision.message ==
        "SKIPPED: no CUDA device (CUDA_VISIBLE_DEVICES=-1 hides the 1 GPU(s) the driver lists)");
}

TEST_CASE("FLASHSCOPE_REQUIRE_GPU=1 turns every skip into a failure") {
  GpuEnvironment required = no_gpu_anywhere();
  required.gpu_required = true;
  const GpuTestDecision decision = decide_gpu_tests(required);
  CHECK(decision.action == GpuTestAction::fail);
  CHECK(contains(decision.message, "FAILED: FLASHSCOPE_REQUIRE_GPU=1 but no usable CUDA device"));
  CHECK(contains(decision.message, "the driver lists no GPU"));
  required.device_count_status = cudaErrorNoDevice;
  required.cuda_visible_devices_set = true;
  required.cuda_visible_devices = "";
  CHECK(decide_gpu_tests(required).action == GpuTestAction::fail);
}

TEST_CASE("this machine's environment is read without failing") {
  const GpuEnvironment environment = current_gpu_environment();
  // Whatever the machine, the decision is one of the three, with a message unless it runs.
  const GpuTestDecision decision = decide_gpu_tests(environment);
  CHECK((decision.action == GpuTestAction::run) == decision.message.empty());
  MESSAGE("this machine: " << (decision.message.empty() ? "GPU tests run" : decision.message)
                           << "; driver lists " << environment.system_gpus.size() << " GPU(s)");
}
