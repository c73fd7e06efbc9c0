#include "kernels/common/cuda_check.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

namespace flashscope {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw CudaError(code, std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                            cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")");
}

bool nvidia_driver_present() {
  if (void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
    ::dlclose(driver);  // only drops the reference NOLOAD added
    return true;
  }
  struct stat info {};
  return ::stat("/proc/driver/nvidia", &info) == 0;
}

std::string cuda_unavailable_reason(cudaError_t status, const char* call) {
  const std::string runtime_says = std::string(call) + " returned " + cudaGetErrorName(status) +
                                   " (" + cudaGetErrorString(status) + ")";
  if ((status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice) &&
      !nvidia_driver_present())
    return "no NVIDIA driver on this machine (no libcuda.so.1 for the CUDA runtime to load, no "
           "/proc/driver/nvidia); " +
           runtime_says;
  return runtime_says;
}

}  // namespace flashscope
