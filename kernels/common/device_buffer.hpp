// The one owner of a cudaMalloc allocation on the host side: every tool, test and binding that
// needs device memory for a while holds it in a DeviceBuffer, so each allocation is freed exactly
// once on every path (an exception between the allocation and its use included).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "kernels/common/cuda_check.hpp"

namespace flashscope {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // `bytes` of device memory on the current device; throws CudaError (out of memory included).
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) FS_CUDA_CHECK(cudaMalloc(&data_, bytes));
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return data_ != nullptr; }

  // Frees the memory (cudaFree waits for work still using it); the buffer is empty afterwards.
  void reset() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace flashscope
