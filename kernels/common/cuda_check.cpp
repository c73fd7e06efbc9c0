#include "kernels/common/cuda_check.hpp"

namespace flashscope {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw CudaError(code, std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                            cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")");
}

}  // namespace flashscope
