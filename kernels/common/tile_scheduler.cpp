#include "kernels/common/tile_scheduler.hpp"

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <mutex>
#include <string>

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

TileCounter* next_tile_counter() {
  constexpr int kMaxDevices = 64;
  static std::mutex mutex;
  static std::array<TileCounter*, kMaxDevices> pools{};
  static std::array<unsigned, kMaxDevices> next_slot{};
  int device = 0;
  FS_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices)
    throw CudaError(cudaErrorInvalidDevice, "tile counters: device " + std::to_string(device) +
                                                " is beyond the " + std::to_string(kMaxDevices) +
                                                " devices the pool serves");
  const std::lock_guard<std::mutex> lock(mutex);
  TileCounter*& pool = pools[static_cast<std::size_t>(device)];
  if (pool == nullptr) {
    // Lives as long as the process: launches may still be in flight at exit.
    FS_CUDA_CHECK(cudaMalloc(&pool, kTileCounterSlots * sizeof(TileCounter)));
    FS_CUDA_CHECK(cudaMemset(pool, 0, kTileCounterSlots * sizeof(TileCounter)));
  }
  unsigned& slot = next_slot[static_cast<std::size_t>(device)];
  TileCounter* counter = pool + slot;
  slot = (slot + 1) % kTileCounterSlots;
  return counter;
}

}  // namespace flashscope::scheduling
