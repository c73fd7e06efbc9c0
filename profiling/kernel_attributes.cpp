#include "profiling/kernel_attributes.hpp"

#include <cuda_runtime.h>

#include "kernels/common/cuda_check.hpp"

namespace flashscope {

KernelResources kernel_resources(const KernelEntry& entry) {
  cudaFuncAttributes attributes{};
  FS_CUDA_CHECK(cudaFuncGetAttributes(&attributes, entry.kernel_function));
  KernelResources resources;
  resources.registers_per_thread = attributes.numRegs;
  resources.shared_bytes_per_cta = static_cast<int>(attributes.sharedSizeBytes) + entry.smem_bytes;
  resources.local_bytes_per_thread = static_cast<int>(attributes.localSizeBytes);
  return resources;
}

}  // namespace flashscope
