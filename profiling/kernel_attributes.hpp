// What the compiler gave a kernel, from cudaFuncGetAttributes: registers per thread, shared memory
// per CTA (static + the launch's dynamic bytes) and local memory per thread (spills and stack).
#pragma once

#include "kernels/common/registry.hpp"

namespace flashscope {

struct KernelResources {
  int registers_per_thread = 0;
  int shared_bytes_per_cta = 0;  // static + dynamic
  int local_bytes_per_thread = 0;
};

// Needs a current device context; throws CudaError.
KernelResources kernel_resources(const KernelEntry& entry);

}  // namespace flashscope
