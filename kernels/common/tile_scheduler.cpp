#include "kernels/common/tile_scheduler.hpp"

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <stdexcept>
#include <string>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/persistent_grid_limit.hpp"

namespace flashscope::scheduling {

namespace {

// limit_persistent_sms's cap; 0: none.
std::atomic<int> sm_limit{0};

// The device's own multiprocessor count.
int device_sm_count() {
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

}  // namespace

int current_device_sm_count() {
  const int count = device_sm_count();
  const int limit = persistent_sm_limit();
  return limit > 0 && limit < count ? limit : count;
}

void limit_persistent_sms(int sms) {
  if (sms < 0)
    throw std::invalid_argument("a persistent grid's multiprocessor cap is 0 (none) or more, not " +
                                std::to_string(sms));
  sm_limit.store(sms, std::memory_order_relaxed);
}

int persistent_sm_limit() {
  return sm_limit.load(std::memory_order_relaxed);
}

}  // namespace flashscope::scheduling
