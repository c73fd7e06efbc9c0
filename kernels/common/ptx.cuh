// Thin wrappers over the Ampere instructions every kernel step uses (spec §3.2, §3.4):
// cp.async, ldmatrix, mma.sync m16n8k16 and the 128-bit global store of step 14. Each wrapper
// is one instruction; the steps decide how to combine them.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "config.hpp"

namespace flashscope::ptx {

__device__ __forceinline__ std::uint32_t smem_address(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

// ---- GMEM -> SMEM -------------------------------------------------------------------------

// 16-byte copy that bypasses L1 (.cg) with a 128-byte L2 prefetch hint.
__device__ __forceinline__ void cp_async_16(void* smem_destination, const void* gmem_source) {
  asm volatile(
      "cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(smem_address(smem_destination)),
      "l"(gmem_source));
}

// The same copy for a row that may lie past the tensor's end (the backward steps' last blocks):
// when `valid` is false it reads nothing (src-size 0) and fills the 16 bytes with zeros; the
// source address must still be a valid one.
__device__ __forceinline__ void cp_async_16_zfill(void* smem_destination, const void* gmem_source,
                                                  bool valid) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(
                   smem_address(smem_destination)),
               "l"(gmem_source), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until at most `kPending` committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// ---- SMEM -> RF ---------------------------------------------------------------------------

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(smem_row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(smem_row)));
}

// Same, with the per-lane row address given as a shared-space byte address.
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_row));
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_row));
}

// ---- Tensor-core mma ----------------------------------------------------------------------

// D = A·B + D for one 16x16 (A, 4 regs) by 16x8 (B, 2 regs) step with fp32 accumulators.
template <DType kDType>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4],
                                             std::uint32_t b0, std::uint32_t b1) {
  if constexpr (kDType == DType::FP16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Rounds two floats to one packed 16-bit pair (round to nearest even); `lo` in the low half.
template <DType kDType>
__device__ __forceinline__ std::uint32_t pack_pair(float lo, float hi) {
  if constexpr (kDType == DType::FP16) {
    const __half2 pair = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&pair);
  } else {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&pair);
  }
}

// The inverse of pack_pair: the two 16-bit values of a packed pair as floats (`lo` in .x).
template <DType kDType>
__device__ __forceinline__ float2 unpack_pair(std::uint32_t pair) {
  if constexpr (kDType == DType::FP16) {
    return __half22float2(*reinterpret_cast<const __half2*>(&pair));
  } else {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&pair));
  }
}

// ---- Special functions and shuffles ---------------------------------------------------------

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float shuffle_xor(float value, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, value, lane_mask);
}

// ---- Stores ---------------------------------------------------------------------------------

// 128-bit global store, relaxed at system scope, not allocated in L1 (step 14's O store).
__device__ __forceinline__ void st_global_relaxed_sys_no_allocate_b128(void* gmem,
                                                                       const uint4& value) {
  asm volatile(
      "{\n"
      "  .reg .b128 fs_value;\n"
      "  mov.b128 fs_value, {%1, %2};\n"
      "  st.relaxed.sys.global.L1::no_allocate.b128 [%0], fs_value;\n"
      "}\n" ::"l"(gmem),
      "l"(static_cast<std::uint64_t>(value.x) | (static_cast<std::uint64_t>(value.y) << 32)),
      "l"(static_cast<std::uint64_t>(value.z) | (static_cast<std::uint64_t>(value.w) << 32))
      : "memory");
}

// ---- Reductions to global memory (the backward's dQ accumulator) ---------------------------

// Two adjacent fp32 values added in one 8-byte reduction, without a return value (RED in SASS).
// The vector form exists from sm_90 on; older targets issue two scalar reductions.
__device__ __forceinline__ void red_add_v2_f32(float* gmem, float x, float y) {
#if __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(gmem), "f"(x), "f"(y) : "memory");
#else
  asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(gmem), "f"(x) : "memory");
  asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(gmem + 1), "f"(y) : "memory");
#endif
}

}  // namespace flashscope::ptx
