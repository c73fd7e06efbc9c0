#include "profiling/device.hpp"

#include <cuda_runtime.h>

#include "kernels/common/cuda_check.hpp"

namespace flashscope {

int cuda_device_count() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess)
    throw NoCudaDevice("no usable CUDA device: " + cuda_unavailable_reason(status));
  if (count == 0) throw NoCudaDevice("no usable CUDA device: cudaGetDeviceCount found none");
  return count;
}

std::string format_gpu_uuid(const unsigned char (&bytes)[16]) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';  // 8-4-4-4-12 hex digits
    text += kHex[bytes[i] >> 4];
    text += kHex[bytes[i] & 0xF];
  }
  return text;
}

DeviceDescription describe_device(int index) {
  const int count = cuda_device_count();
  if (index < 0 || index >= count)
    throw NoCudaDevice("CUDA device " + std::to_string(index) +
                       " does not exist; this machine has " + std::to_string(count) +
                       " (indices 0.." + std::to_string(count - 1) + ")");

  DeviceDescription device;
  device.index = index;
  cudaDeviceProp properties{};
  FS_CUDA_CHECK(cudaGetDeviceProperties(&properties, index));
  device.name = properties.name;
  unsigned char uuid[16];
  for (int i = 0; i < 16; ++i)
    uuid[i] = static_cast<unsigned char>(properties.uuid.bytes[i]);
  device.uuid = format_gpu_uuid(uuid);
  device.compute_capability = properties.major * 10 + properties.minor;
  device.sm_count = properties.multiProcessorCount;
  device.l2_bytes = properties.l2CacheSize;
  int clock_khz = 0;
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, index));
  device.peak_sm_clock_mhz = clock_khz / 1000;
  return device;
}

void activate_device(int index) {
  FS_CUDA_CHECK(cudaSetDevice(index));
  FS_CUDA_CHECK(cudaInitDevice(index, 0, 0));
  FS_CUDA_CHECK(cudaFree(nullptr));  // makes the primary context current on this thread
}

double tensor_peak_tflops_bound(const DeviceDescription& device) {
  return static_cast<double>(device.sm_count) * device.peak_sm_clock_mhz * 1e6 * 4096.0 / 1e12;
}

}  // namespace flashscope
