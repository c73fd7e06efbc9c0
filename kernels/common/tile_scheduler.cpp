#include "kernels/common/tile_scheduler.hpp"

#include <cuda_runtime.h>

#include <array>
#include <atomic>

#include "kernels/common/cuda_check.hpp"

namespace flashscope::scheduling {

int current_device_sm_count() {
  // Sweeps time launches on several devices from several threads (one worker per GPU), so the
  // cache is per device and its entries are atomics; 0 marks a device not queried yet.
  constexpr int kMaxDevices = 64;
  static std::array<std::atomic<int>, kMaxDevices> cached{};
  int device = 0;
  FS_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices) {
    int count = 0;
    FS_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  }
  int count = cached[static_cast<std::size_t>(device)].load(std::memory_order_relaxed);
  if (count == 0) {
    FS_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    cached[static_cast<std::size_t>(device)].store(count, std::memory_order_relaxed);
  }
  return count;
}

}  // namespace flashscope::scheduling
