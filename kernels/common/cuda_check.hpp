// Every CUDA runtime call goes through FS_CUDA_CHECK so a failure names the file, the line and
// the call that failed (as nvbench does), instead of surfacing later as a wrong result.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace flashscope {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

// Whether this machine has an NVIDIA driver at all: the CUDA runtime loaded libcuda.so.1 (asked
// with dlopen's RTLD_NOLOAD, which loads nothing: flashscope never links libcuda), or the kernel
// driver is there (/proc/driver/nvidia).
bool nvidia_driver_present();

// Why CUDA cannot be used, for a message after "no usable CUDA device: ": the runtime's error
// name and text, except where it reports cudaErrorInsufficientDriver (or no device) on a machine
// without any NVIDIA driver, which it says as "no NVIDIA driver on this machine (...)", not
// "CUDA driver version is insufficient".
std::string cuda_unavailable_reason(cudaError_t status, const char* call = "cudaGetDeviceCount");

}  // namespace flashscope

#define FS_CUDA_CHECK(call)                                                  \
  do {                                                                       \
    const cudaError_t fs_status_ = (call);                                   \
    if (fs_status_ != cudaSuccess)                                           \
      ::flashscope::throw_cuda_error(fs_status_, #call, __FILE__, __LINE__); \
  } while (0)
