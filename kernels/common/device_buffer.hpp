// The one owner of a cudaMalloc allocation on the host side: every tool, test and binding that
// needs device memory for a while holds it in a DeviceBuffer, so each allocation is freed exactly
// once on every path (an exception between the allocation and its use included). DeviceVector
// counts it in elements of one type; CudaStream owns a non-blocking stream the same way.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

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

// `count` elements of T in a DeviceBuffer, for code that thinks in elements (the ceilings'
// per-thread results and checksums).
template <typename T>
class DeviceVector {
 public:
  explicit DeviceVector(std::size_t count) : buffer_(count * sizeof(T)), count_(count) {}
  T* get() const { return buffer_.as<T>(); }
  std::size_t count() const { return count_; }
  // Elements [offset, offset + count) on the host (a synchronous copy); throws CudaError.
  std::vector<T> copy_to_host(std::size_t offset, std::size_t count) const {
    std::vector<T> host(count);
    if (count > 0)
      FS_CUDA_CHECK(
          cudaMemcpy(host.data(), get() + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  std::vector<T> copy_to_host() const { return copy_to_host(0, count_); }

 private:
  DeviceBuffer buffer_;
  std::size_t count_ = 0;
};

// A non-blocking CUDA stream (it does not synchronize with the legacy default stream), destroyed
// with its owner.
class CudaStream {
 public:
  CudaStream() { FS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~CudaStream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace flashscope
