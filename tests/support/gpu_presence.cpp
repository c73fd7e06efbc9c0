#include "tests/support/gpu_presence.hpp"

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "kernels/common/cuda_check.hpp"

namespace flashscope::testing {

namespace {

std::string cuda_error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

std::string gpu_list(const std::vector<std::string>& gpus) {
  std::string text;
  for (const std::string& gpu : gpus)
    text += (text.empty() ? "" : "; ") + gpu;
  return text;
}

// "Model:" line of /proc/driver/nvidia/gpus/<bus id>/information.
std::string model_of(const std::string& folder) {
  std::ifstream in(folder + "/information");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("Model:")) {
      const std::size_t start = line.find_first_not_of(" \t", 6);
      return start == std::string::npos ? std::string() : line.substr(start);
    }
  return {};
}

}  // namespace

GpuTestDecision decide_gpu_tests(const GpuEnvironment& environment) {
  const bool cuda_sees_one =
      environment.device_count_status == cudaSuccess && environment.device_count > 0;
  if (cuda_sees_one) return {GpuTestAction::run, ""};
  // The runtime reports a machine without any driver as an "insufficient" one: say which it is.
  const std::string cuda_says =
      (environment.driver_present ? "" : "no NVIDIA driver on this machine; ") +
      (environment.device_count_status != cudaSuccess
           ? "cudaGetDeviceCount: " + cuda_error_text(environment.device_count_status)
           : std::string("cudaGetDeviceCount found 0 devices"));
  // CUDA_VISIBLE_DEVICES hiding every GPU is a choice, not a fault: CUDA then reports no device.
  const bool hidden_on_purpose =
      environment.cuda_visible_devices_set &&
      (environment.device_count_status == cudaErrorNoDevice ||
       (environment.device_count_status == cudaSuccess && environment.device_count == 0));
  if (environment.gpu_required)
    return {GpuTestAction::fail,
            "FAILED: FLASHSCOPE_REQUIRE_GPU=1 but no usable CUDA device (" + cuda_says +
                (environment.system_gpus.empty()
                     ? "; the driver lists no GPU"
                     : "; the driver lists " + gpu_list(environment.system_gpus)) +
                (hidden_on_purpose ? "; CUDA_VISIBLE_DEVICES=" + environment.cuda_visible_devices
                                   : std::string()) +
                ")"};
  if (!environment.system_gpus.empty() && !hidden_on_purpose)
    return {GpuTestAction::fail,
            "FAILED: the driver lists " + std::to_string(environment.system_gpus.size()) +
                " GPU(s) (" + gpu_list(environment.system_gpus) + ") but CUDA cannot use them (" +
                cuda_says +
                "): a broken or mismatched driver or runtime, not a machine without a GPU"};
  if (hidden_on_purpose && !environment.system_gpus.empty())
    return {GpuTestAction::skip,
            "SKIPPED: no CUDA device (CUDA_VISIBLE_DEVICES=" + environment.cuda_visible_devices +
                " hides the " + std::to_string(environment.system_gpus.size()) +
                " GPU(s) the driver lists)"};
  return {GpuTestAction::skip, "SKIPPED: no CUDA device (" + cuda_says + ")"};
}

std::vector<std::string> list_system_gpus() {
  std::vector<std::string> gpus;
  const std::string root = "/proc/driver/nvidia/gpus";
  if (DIR* folder = ::opendir(root.c_str())) {
    while (const dirent* entry = ::readdir(folder)) {
      const std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      const std::string model = model_of(root + "/" + std::string(name));
      gpus.push_back(std::string(name) + (model.empty() ? "" : " " + model));
    }
    ::closedir(folder);
  }
  if (!gpus.empty()) return gpus;
  // A container may hide /proc/driver/nvidia but still ship nvidia-smi.
  if (FILE* pipe = ::popen("nvidia-smi -L 2>/dev/null", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, pipe)) {
      std::string text(line);
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
        text.pop_back();
      if (text.starts_with("GPU ")) gpus.push_back(text);
    }
    ::pclose(pipe);
  }
  return gpus;
}

GpuEnvironment current_gpu_environment() {
  GpuEnvironment environment;
  environment.device_count_status = cudaGetDeviceCount(&environment.device_count);
  if (environment.device_count_status != cudaSuccess) environment.device_count = 0;
  // Only a failure needs the driver's view (listing may start nvidia-smi).
  if (environment.device_count == 0) {
    environment.system_gpus = list_system_gpus();
    environment.driver_present = nvidia_driver_present();
  }
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    environment.cuda_visible_devices_set = true;
    environment.cuda_visible_devices = visible;
  }
  const char* required = std::getenv("FLASHSCOPE_REQUIRE_GPU");
  environment.gpu_required = required && std::string_view(required) == "1";
  return environment;
}

namespace {
std::vector<std::string>& skip_reasons() {
  static std::vector<std::string> reasons;
  return reasons;
}
}  // namespace

void skip_test_case(const std::string& reason) {
  skip_reasons().push_back(reason);
}

const std::vector<std::string>& skipped_test_cases() {
  return skip_reasons();
}

}  // namespace flashscope::testing
