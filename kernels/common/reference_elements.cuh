// The 16-bit element types of the GPU references (reference_gpu.cu, reference_backward_gpu.cu):
// the storage type of a DType, its conversions, and rounding an fp32 value to it. The kernels of
// the steps keep their own (each step folder is frozen); the references share this one.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/common/config.hpp"

namespace flashscope::reference_elements {

template <DType kDType>
struct Element;
template <>
struct Element<DType::FP16> {
  using type = __half;
  static __device__ float to_float(type x) { return __half2float(x); }
  static __device__ type from_float(float x) { return __float2half_rn(x); }
};
template <>
struct Element<DType::BF16> {
  using type = __nv_bfloat16;
  static __device__ float to_float(type x) { return __bfloat162float(x); }
  static __device__ type from_float(float x) { return __float2bfloat16_rn(x); }
};

// x rounded to the dtype and read back: what a low-precision reference stores between its steps.
template <DType kDType>
__device__ float round_to(float x) {
  return Element<kDType>::to_float(Element<kDType>::from_float(x));
}

}  // namespace flashscope::reference_elements
