// Test helpers: owning device buffers of fp16/bf16 and seeded random attention inputs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/common/config.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/device_buffer.hpp"
#include "kernels/common/problem.hpp"
#include "configs/launch_validation.hpp"
#include "kernels/common/reference.hpp"

namespace flashscope::testing {

// `problem` in `dtype`: the tests draw shapes and dtypes from separate lists.
inline Problem of_dtype(Problem problem, DType dtype) {
  problem.dtype = dtype;
  return problem;
}

// A fresh seed per run, printed by the tests; FLASHSCOPE_SEED=<n> reproduces a run.
inline std::uint64_t fresh_seed() {
  if (const char* fixed = std::getenv("FLASHSCOPE_SEED")) return std::strtoull(fixed, nullptr, 10);
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

// `count` elements of `dtype` on the device (in the one DeviceBuffer of kernels/common), with the
// element-wise host access tests need.
class DeviceTensor {
 public:
  DeviceTensor(std::int64_t count, DType dtype)
      : buffer_(static_cast<std::size_t>(count) * element_bytes(dtype)),
        count_(count),
        dtype_(dtype) {}

  void* data() const { return buffer_.get(); }
  std::int64_t count() const { return count_; }

  std::vector<double> to_host() const {
    std::vector<std::uint16_t> bits(static_cast<std::size_t>(count_));
    FS_CUDA_CHECK(cudaMemcpy(bits.data(), data(), bits.size() * 2, cudaMemcpyDeviceToHost));
    std::vector<double> out(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i)
      out[i] = to_double(bits[i]);
    return out;
  }

  void add_to_element(std::int64_t index, double delta) {
    std::uint16_t bits = 0;
    FS_CUDA_CHECK(
        cudaMemcpy(&bits, static_cast<std::uint16_t*>(data()) + index, 2, cudaMemcpyDeviceToHost));
    bits = from_double(to_double(bits) + delta);
    FS_CUDA_CHECK(
        cudaMemcpy(static_cast<std::uint16_t*>(data()) + index, &bits, 2, cudaMemcpyHostToDevice));
  }

 private:
  double to_double(std::uint16_t bits) const {
    if (dtype_ == DType::FP16) {
      __half_raw raw;
      raw.x = bits;
      return static_cast<double>(__half2float(__half(raw)));
    }
    __nv_bfloat16_raw raw;
    raw.x = bits;
    return static_cast<double>(__bfloat162float(__nv_bfloat16(raw)));
  }
  std::uint16_t from_double(double value) const {
    if (dtype_ == DType::FP16) return __half_raw(__float2half_rn(static_cast<float>(value))).x;
    return __nv_bfloat16_raw(__float2bfloat16_rn(static_cast<float>(value))).x;
  }

  DeviceBuffer buffer_;
  std::int64_t count_;
  DType dtype_;
};

// Q, K, V of a problem drawn from N(0, scale²) with seeds derived from `seed`, and an O buffer.
class AttentionInputs {
 public:
  AttentionInputs(const Problem& problem, std::uint64_t seed, float scale)
      : problem_(problem),
        q_(problem.query_elements(), problem.dtype),
        k_(problem.key_value_elements(), problem.dtype),
        v_(problem.key_value_elements(), problem.dtype),
        o_(problem.query_elements(), problem.dtype) {
    fill_random_normal(q_.data(), problem.dtype, problem.query_elements(), seed * 3 + 0, scale);
    fill_random_normal(k_.data(), problem.dtype, problem.key_value_elements(), seed * 3 + 1, scale);
    fill_random_normal(v_.data(), problem.dtype, problem.key_value_elements(), seed * 3 + 2, scale);
  }

  const void* q() const { return q_.data(); }
  const void* k() const { return k_.data(); }
  const void* v() const { return v_.data(); }
  void* o() const { return o_.data(); }
  std::vector<double> q_host() const { return q_.to_host(); }
  std::vector<double> k_host() const { return k_.to_host(); }
  std::vector<double> v_host() const { return v_.to_host(); }

  const Problem& problem() const { return problem_; }

  AttentionTensors tensors() const {
    const std::array<std::int64_t, 4> q_shape{problem_.batch, problem_.seq_len, problem_.heads,
                                              problem_.d_head};
    const std::array<std::int64_t, 4> kv_shape{problem_.batch, problem_.seq_len, problem_.heads_kv,
                                               problem_.d_head};
    const auto view = [&](const void* data, const std::array<std::int64_t, 4>& shape) {
      return TensorView{data, problem_.dtype, MemoryLocation::device, shape,
                        contiguous_strides(shape)};
    };
    // The mask travels with the problem: a causal problem asks the kernel for the causal launch.
    return {view(q(), q_shape), view(k(), kv_shape), view(v(), kv_shape), view(o(), q_shape),
            problem_.causal};
  }

 private:
  Problem problem_;
  DeviceTensor q_, k_, v_, o_;
};

}  // namespace flashscope::testing
