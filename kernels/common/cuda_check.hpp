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

}  // namespace flashscope

#define FS_CUDA_CHECK(call)                                                  \
  do {                                                                       \
    const cudaError_t fs_status_ = (call);                                   \
    if (fs_status_ != cudaSuccess)                                           \
      ::flashscope::throw_cuda_error(fs_status_, #call, __FILE__, __LINE__); \
  } while (0)
