#include "profiling/ceilings/ceiling_kernels.hpp"

#include <cuda_fp16.h>

#include <algorithm>

#include "kernels/common/ptx.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FS_CEILINGS_WGMMA 1
#include "kernels/common/ptx_hopper.cuh"
#endif

namespace flashscope::ceilings {

namespace {

template <DType kDType>
__device__ std::uint32_t packed(float value) {
  return ptx::pack_pair<kDType>(value, value);
}

template <DType kDType>
__global__ void __launch_bounds__(kMmaSyncThreads) mma_sync_kernel(int iterations, float* out) {
  const std::uint32_t one = packed<kDType>(1.0f);
  const std::uint32_t a[4] = {one, one, one, one};
  const std::uint32_t b = packed<kDType>(kMmaBValue);
  float accumulators[kMmaSyncChains][4] = {};
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int chain = 0; chain < kMmaSyncChains; ++chain)
      ptx::mma_m16n8k16<kDType>(accumulators[chain], a, b, b);
  }
  // Every chain must reach the output, or the compiler may drop it.
  float first = accumulators[0][0];
#pragma unroll
  for (int chain = 1; chain < kMmaSyncChains; ++chain)
    if (accumulators[chain][0] != first) first = -1.0f;
  out[blockIdx.x * blockDim.x + threadIdx.x] = first;
}

#ifdef FS_CEILINGS_WGMMA
// A and B tiles in the 128-byte-swizzled K-major layout the Hopper steps use: 64 K-columns per
// 128-byte row, 8-row atoms of 1024 bytes. Every element holds the same value, so the products do
// not depend on how the descriptor walks the tile.
constexpr int kTileK = 64;
constexpr int kARows = 64;
constexpr int kBRows = 256;
#endif

template <DType kDType>
__global__ void __launch_bounds__(kWgmmaThreads)
    wgmma_kernel(int iterations, float* out, int* executed) {
#ifdef FS_CEILINGS_WGMMA
  __shared__ alignas(1024) std::uint32_t a_tile[kARows * kTileK / 2];
  __shared__ alignas(1024) std::uint32_t b_tile[kBRows * kTileK / 2];
  const std::uint32_t one = packed<kDType>(1.0f);
  const std::uint32_t b = packed<kDType>(kMmaBValue);
  for (int i = threadIdx.x; i < kARows * kTileK / 2; i += blockDim.x)
    a_tile[i] = one;
  for (int i = threadIdx.x; i < kBRows * kTileK / 2; i += blockDim.x)
    b_tile[i] = b;
  ptx::fence_proxy_async_shared();  // the wgmma reads SMEM through the async proxy
  __syncthreads();

  const std::uint64_t a_descriptor = wgmma::make_descriptor(
      ptx::smem_address(a_tile), 16, wgmma::kSwizzle128AtomBytes, wgmma::Swizzle::bytes128);
  const std::uint64_t b_descriptor = wgmma::make_descriptor(
      ptx::smem_address(b_tile), 16, wgmma::kSwizzle128AtomBytes, wgmma::Swizzle::bytes128);
  float d[32][4] = {};
  ptx::fence_operands(d);
  for (int i = 0; i < iterations; ++i) {
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kWgmmaPerGroup; ++k) {
      // The four 16-wide K slices of the 64-wide tile, 32 bytes apart inside each 128-byte row.
      const std::uint32_t offset = 32 * (k % (kTileK / 16));
      ptx::WgmmaOp<kDType, 256>::template ss<0>(d, wgmma::advance_descriptor(a_descriptor, offset),
                                                wgmma::advance_descriptor(b_descriptor, offset),
                                                true);
    }
    ptx::wgmma_commit_group();
    ptx::wgmma_wait_group<0>();
    ptx::fence_operands(d);
  }
  float first = d[0][0];
#pragma unroll
  for (int j = 0; j < 32; ++j)
    if (d[j][0] != first || d[j][3] != first) first = -1.0f;
  out[blockIdx.x * blockDim.x + threadIdx.x] = first;
  if (blockIdx.x == 0 && threadIdx.x == 0) *executed = 1;
#else
  // No sm_90a code for this device: the host sees executed == 0 and reports why.
  (void)iterations;
  (void)out;
  if (blockIdx.x == 0 && threadIdx.x == 0) *executed = 0;
#endif
}

__global__ void __launch_bounds__(kStreamThreads)
    hbm_read_kernel(const uint4* data, std::size_t words, unsigned long long* sums) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long sum = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += stride) {
    const uint4 word = __ldcs(data + i);  // streaming: no reuse to keep in cache
    sum += static_cast<unsigned long long>(word.x) + word.y + word.z + word.w;
  }
  sums[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

__global__ void __launch_bounds__(kStreamThreads)
    hbm_copy_kernel(const uint4* source, uint4* destination, std::size_t words) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += stride)
    __stcs(destination + i, __ldcs(source + i));
}

// The larger of `worst` and |x - x*|, NaN winning (fmaxf would drop a NaN chain).
__device__ __forceinline__ float worse_deviation(float worst, float x) {
  const float deviation = fabsf(x - static_cast<float>(kEx2FixedPoint));
  return deviation > worst || deviation != deviation ? deviation : worst;
}

// x <- 2^(-x) on kEx2Chains chains of one float each.
__global__ void __launch_bounds__(kEx2Threads) ex2_f32_kernel(int iterations, float* out) {
  float x[kEx2Chains];
#pragma unroll
  for (int c = 0; c < kEx2Chains; ++c)
    x[c] = 0.1f * (c + 1) + 1e-3f * (threadIdx.x % 7);
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < kEx2Chains; ++c)
      asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(x[c]) : "f"(-x[c]));
  }
  float worst = 0;
#pragma unroll
  for (int c = 0; c < kEx2Chains; ++c)
    worst = worse_deviation(worst, x[c]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = worst;
}

// The same on two halves per register: ex2.approx.f16x2 of the halves with their signs flipped.
__global__ void __launch_bounds__(kEx2Threads) ex2_f16x2_kernel(int iterations, float* out) {
  std::uint32_t x[kEx2Chains];
#pragma unroll
  for (int c = 0; c < kEx2Chains; ++c) {
    const __half2 start = __floats2half2_rn(0.1f * (c + 1), 0.9f - 0.1f * c);
    x[c] = *reinterpret_cast<const std::uint32_t*>(&start);
  }
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < kEx2Chains; ++c)
      asm("ex2.approx.f16x2 %0, %1;" : "=r"(x[c]) : "r"(x[c] ^ 0x80008000u));
  }
  float worst = 0;
#pragma unroll
  for (int c = 0; c < kEx2Chains; ++c) {
    const float2 pair = __half22float2(*reinterpret_cast<const __half2*>(&x[c]));
    worst = worse_deviation(worse_deviation(worst, pair.x), pair.y);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = worst;
}

__global__ void __launch_bounds__(kSmemThreads)
    smem_read_kernel(int iterations, std::uint32_t* sums) {
  __shared__ uint4 slots[kSmemSlots];
  for (int s = threadIdx.x; s < kSmemSlots; s += kSmemThreads)
    slots[s] = make_uint4(smem_word(s, 0), smem_word(s, 1), smem_word(s, 2), smem_word(s, 3));
  __syncthreads();
  const std::uint32_t base = ptx::smem_address(&slots[threadIdx.x]);
  std::uint32_t sum[kSmemUnroll] = {};
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < kSmemUnroll; ++j) {
      std::uint32_t a, b, c, d;
      // volatile: the same addresses every iteration must be read every iteration.
      asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
                   : "r"(base + j * kSmemThreads * 16));
      sum[j] += a + b + c + d;
    }
  }
  std::uint32_t total = 0;
#pragma unroll
  for (int j = 0; j < kSmemUnroll; ++j)
    total += sum[j];
  sums[blockIdx.x * blockDim.x + threadIdx.x] = total;
}

}  // namespace

namespace {

template <typename Kernel>
int resident_blocks(Kernel kernel, int threads) {
  int blocks = 0;
  const cudaError_t status =
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, 0);
  if (status != cudaSuccess) return -static_cast<int>(status);
  return blocks;
}

}  // namespace

int mma_sync_blocks_per_sm(DType dtype) {
  return dtype == DType::FP16 ? resident_blocks(mma_sync_kernel<DType::FP16>, kMmaSyncThreads)
                              : resident_blocks(mma_sync_kernel<DType::BF16>, kMmaSyncThreads);
}

int wgmma_blocks_per_sm(DType dtype) {
  return dtype == DType::FP16 ? resident_blocks(wgmma_kernel<DType::FP16>, kWgmmaThreads)
                              : resident_blocks(wgmma_kernel<DType::BF16>, kWgmmaThreads);
}

int hbm_blocks_per_sm() {
  const int read = resident_blocks(hbm_read_kernel, kStreamThreads);
  const int copy = resident_blocks(hbm_copy_kernel, kStreamThreads);
  return read < 0 ? read : copy < 0 ? copy : std::min(read, copy);
}

int ex2_blocks_per_sm(bool half2) {
  return half2 ? resident_blocks(ex2_f16x2_kernel, kEx2Threads)
               : resident_blocks(ex2_f32_kernel, kEx2Threads);
}

int smem_blocks_per_sm() {
  return resident_blocks(smem_read_kernel, kSmemThreads);
}

double mma_sync_flops(int blocks, int iterations) {
  const double warps = static_cast<double>(blocks) * (kMmaSyncThreads / 32);
  return warps * iterations * kMmaSyncChains * kMmaSyncFlopsPerInstruction;
}

float mma_sync_expected_accumulator(int iterations) {
  return static_cast<float>(iterations) * 16 * kMmaBValue;
}

cudaError_t launch_mma_sync(DType dtype, int blocks, int iterations, float* out,
                            cudaStream_t stream) {
  if (dtype == DType::FP16)
    mma_sync_kernel<DType::FP16><<<blocks, kMmaSyncThreads, 0, stream>>>(iterations, out);
  else
    mma_sync_kernel<DType::BF16><<<blocks, kMmaSyncThreads, 0, stream>>>(iterations, out);
  return cudaGetLastError();
}

double wgmma_flops(int blocks, int iterations) {
  const double warpgroups = static_cast<double>(blocks) * kWgmmaWarpgroups;
  return warpgroups * iterations * kWgmmaPerGroup * kWgmmaFlopsPerInstruction;
}

float wgmma_expected_accumulator(int iterations) {
  return static_cast<float>(iterations) * kWgmmaPerGroup * 16 * kMmaBValue;
}

bool wgmma_compiled(cudaStream_t stream) {
  float* out = nullptr;
  int* executed = nullptr;
  bool result = false;
  if (cudaMalloc(&out, kWgmmaThreads * sizeof(float)) == cudaSuccess &&
      cudaMalloc(&executed, sizeof(int)) == cudaSuccess &&
      cudaMemsetAsync(executed, 0xff, sizeof(int), stream) == cudaSuccess) {
    wgmma_kernel<DType::FP16><<<1, kWgmmaThreads, 0, stream>>>(1, out, executed);
    int host = -1;
    if (cudaGetLastError() == cudaSuccess &&
        cudaMemcpyAsync(&host, executed, sizeof(int), cudaMemcpyDeviceToHost, stream) ==
            cudaSuccess &&
        cudaStreamSynchronize(stream) == cudaSuccess)
      result = host == 1;
  }
  cudaFree(out);
  cudaFree(executed);
  return result;
}

cudaError_t launch_wgmma(DType dtype, int blocks, int iterations, float* out, int* executed,
                         cudaStream_t stream) {
  if (dtype == DType::FP16)
    wgmma_kernel<DType::FP16><<<blocks, kWgmmaThreads, 0, stream>>>(iterations, out, executed);
  else
    wgmma_kernel<DType::BF16><<<blocks, kWgmmaThreads, 0, stream>>>(iterations, out, executed);
  return cudaGetLastError();
}

cudaError_t launch_hbm_read(const uint4* data, std::size_t words, int blocks,
                            unsigned long long* sums, cudaStream_t stream) {
  hbm_read_kernel<<<blocks, kStreamThreads, 0, stream>>>(data, words, sums);
  return cudaGetLastError();
}

cudaError_t launch_hbm_copy(const uint4* source, uint4* destination, std::size_t words, int blocks,
                            cudaStream_t stream) {
  hbm_copy_kernel<<<blocks, kStreamThreads, 0, stream>>>(source, destination, words);
  return cudaGetLastError();
}

double ex2_results(bool half2, int blocks, int iterations) {
  return static_cast<double>(blocks) * kEx2Threads * iterations * kEx2Chains * (half2 ? 2 : 1);
}

cudaError_t launch_ex2(bool half2, int blocks, int iterations, float* out, cudaStream_t stream) {
  if (half2)
    ex2_f16x2_kernel<<<blocks, kEx2Threads, 0, stream>>>(iterations, out);
  else
    ex2_f32_kernel<<<blocks, kEx2Threads, 0, stream>>>(iterations, out);
  return cudaGetLastError();
}

std::uint32_t smem_expected_sum(int thread_in_block, int iterations) {
  std::uint32_t per_iteration = 0;
  for (int j = 0; j < kSmemUnroll; ++j) {
    const auto slot = static_cast<std::uint32_t>(thread_in_block + j * kSmemThreads);
    for (std::uint32_t lane = 0; lane < 4; ++lane)
      per_iteration += smem_word(slot, lane);
  }
  return per_iteration * static_cast<std::uint32_t>(iterations);
}

double smem_bytes(int blocks, int iterations) {
  return static_cast<double>(blocks) * kSmemThreads * iterations * kSmemUnroll * 16;
}

cudaError_t launch_smem_read(int blocks, int iterations, std::uint32_t* sums, cudaStream_t stream) {
  smem_read_kernel<<<blocks, kSmemThreads, 0, stream>>>(iterations, sums);
  return cudaGetLastError();
}

}  // namespace flashscope::ceilings
