// The GPU references, random inputs, poisoning and error statistics. Plain CUDA-core code on
// purpose: it must be obviously right, not fast.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/reference_elements.cuh"
#include "kernels/common/reference.hpp"

namespace flashscope {

namespace {

using reference_elements::Element;
using reference_elements::round_to;

constexpr int kRowsPerBlock = 16;  // query rows sharing each K/V tile
constexpr int kKeysPerTile = 32;
constexpr int kThreads = 128;
constexpr int kMaxColumnsPerThread = 2;  // d_head <= 256

// One CTA owns kRowsPerBlock query rows of one (sample, head). Pass 1 finds each row's max and
// sum of exponentials; pass 2 forms the normalised P and accumulates P·V. In low-precision
// mode S, P and O are rounded to the input dtype as a framework's fp16/bf16 attention would.
template <DType kDType, bool kLowPrecision>
__global__ void reference_attention_kernel(Problem shape, const typename Element<kDType>::type* q,
                                           const typename Element<kDType>::type* k,
                                           const typename Element<kDType>::type* v,
                                           typename Element<kDType>::type* o) {
  using E = Element<kDType>;
  extern __shared__ float shared[];
  const int d = shape.d_head;
  const int pitch = d + 1;  // odd pitch: threads reading different key rows hit different banks
  float* q_tile = shared;   // [kRowsPerBlock][d]
  float* kv_tile = q_tile + kRowsPerBlock * d;             // [kKeysPerTile][pitch]
  float* scores = kv_tile + kKeysPerTile * pitch;          // [kRowsPerBlock][kKeysPerTile]
  float* row_max = scores + kRowsPerBlock * kKeysPerTile;  // [kRowsPerBlock]
  float* row_sum = row_max + kRowsPerBlock;                // [kRowsPerBlock]

  const int head = blockIdx.y;
  const int sample = blockIdx.z;
  const int first_row = blockIdx.x * kRowsPerBlock;
  const long long seq_stride = static_cast<long long>(shape.heads) * d;
  const long long base = static_cast<long long>(sample) * shape.seq_len * seq_stride +
                         static_cast<long long>(head) * d;
  // K and V: heads_kv heads; query head h reads K/V head h / group_size.
  const long long kv_seq_stride = static_cast<long long>(shape.heads_kv) * d;
  const long long kv_base = static_cast<long long>(sample) * shape.seq_len * kv_seq_stride +
                            static_cast<long long>(head / (shape.heads / shape.heads_kv)) * d;
  const float scale = rsqrtf(static_cast<float>(d));
  const int rows = min(kRowsPerBlock, shape.seq_len - first_row);

  for (int i = threadIdx.x; i < kRowsPerBlock * d; i += blockDim.x) {
    const int r = i / d;
    q_tile[i] = r < rows ? E::to_float(q[base + (first_row + r) * seq_stride + i % d]) : 0.f;
  }
  if (threadIdx.x < kRowsPerBlock) {
    row_max[threadIdx.x] = -INFINITY;
    row_sum[threadIdx.x] = 0.f;
  }

  const auto load_tile = [&](const typename E::type* source, int first_key, int keys) {
    for (int i = threadIdx.x; i < kKeysPerTile * d; i += blockDim.x) {
      const int j = i / d;
      kv_tile[j * pitch + i % d] =
          j < keys ? E::to_float(source[kv_base + (first_key + j) * kv_seq_stride + i % d]) : 0.f;
    }
  };
  // The causal mask: key j > query i gets score -inf, so probability 0 (Q and K have one length:
  // the bottom-right aligned mask is the lower triangle, diagonal included). Every row keeps key
  // 0, so its running max is finite after the first tile.
  const auto compute_scores = [&](int first_key, int keys) {
    for (int i = threadIdx.x; i < kRowsPerBlock * kKeysPerTile; i += blockDim.x) {
      const int r = i / kKeysPerTile;
      const int j = i % kKeysPerTile;
      float dot = 0.f;
      for (int c = 0; c < d; ++c)
        dot += q_tile[r * d + c] * kv_tile[j * pitch + c];
      const float s = dot * scale;
      const bool masked = shape.causal && first_key + j > first_row + r;
      scores[i] = j < keys && !masked ? (kLowPrecision ? round_to<kDType>(s) : s) : -INFINITY;
    }
  };
  // Causal: the keys after this CTA's last query row are masked for all of its rows.
  const int key_end = shape.causal ? min(shape.seq_len, first_row + kRowsPerBlock) : shape.seq_len;

  // Pass 1: row statistics.
  for (int first_key = 0; first_key < key_end; first_key += kKeysPerTile) {
    const int keys = min(kKeysPerTile, key_end - first_key);
    __syncthreads();
    load_tile(k, first_key, keys);
    __syncthreads();
    compute_scores(first_key, keys);
    __syncthreads();
    if (threadIdx.x < kRowsPerBlock) {
      const int r = threadIdx.x;
      float m = row_max[r];
      for (int j = 0; j < keys; ++j)
        m = fmaxf(m, scores[r * kKeysPerTile + j]);
      float l = row_sum[r] * expf(row_max[r] - m);
      for (int j = 0; j < keys; ++j)
        l += expf(scores[r * kKeysPerTile + j] - m);
      row_max[r] = m;
      row_sum[r] = l;
    }
  }

  // Pass 2: normalised probabilities times V.
  float accumulator[kMaxColumnsPerThread][kRowsPerBlock] = {};
  for (int first_key = 0; first_key < key_end; first_key += kKeysPerTile) {
    const int keys = min(kKeysPerTile, key_end - first_key);
    __syncthreads();
    load_tile(k, first_key, keys);
    __syncthreads();
    compute_scores(first_key, keys);
    __syncthreads();
    for (int i = threadIdx.x; i < kRowsPerBlock * kKeysPerTile; i += blockDim.x) {
      const int r = i / kKeysPerTile;
      const float p = expf(scores[i] - row_max[r]) / row_sum[r];
      scores[i] = kLowPrecision ? round_to<kDType>(p) : p;
    }
    __syncthreads();
    load_tile(v, first_key, keys);
    __syncthreads();
    for (int slot = 0; slot < kMaxColumnsPerThread; ++slot) {
      const int c = threadIdx.x + slot * blockDim.x;
      if (c >= d) break;
      for (int j = 0; j < keys; ++j) {
        const float value = kv_tile[j * pitch + c];
#pragma unroll
        for (int r = 0; r < kRowsPerBlock; ++r)
          accumulator[slot][r] += scores[r * kKeysPerTile + j] * value;
      }
    }
  }
  for (int slot = 0; slot < kMaxColumnsPerThread; ++slot) {
    const int c = threadIdx.x + slot * blockDim.x;
    if (c >= d) break;
    for (int r = 0; r < rows; ++r)
      o[base + (first_row + r) * seq_stride + c] = E::from_float(accumulator[slot][r]);
  }
}

__device__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Box–Muller on two hashed uniforms: a pure function of (seed, index), any grid shape.
template <DType kDType>
__global__ void random_normal_kernel(typename Element<kDType>::type* data, std::int64_t count,
                                     std::uint64_t seed, float scale) {
  const std::uint64_t mixed_seed = splitmix64(seed);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t bits = splitmix64(mixed_seed ^ static_cast<std::uint64_t>(i));
    const float u1 = (static_cast<float>(bits >> 40) + 1.f) * (1.f / 16777217.f);  // (0, 1]
    const float u2 = static_cast<float>((bits >> 16) & 0xFFFFFF) * (1.f / 16777216.f);
    const float normal = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
    data[i] = Element<kDType>::from_float(normal * scale);
  }
}

// e4m3 inputs (docs/spec/fp8-track.md §1): random_normal_kernel's values in fp32, quantized per
// (sample, head) as fp8::quantize does: amax = max |x|, codes = x · 448 / amax rounded to nearest
// and saturating (cvt.rn.satfinite), descale = amax / 448 (1 for an all-zero head).
__device__ __forceinline__ float normal_value(std::uint64_t mixed_seed, std::int64_t i,
                                              float scale) {
  const std::uint64_t bits = splitmix64(mixed_seed ^ static_cast<std::uint64_t>(i));
  const float u1 = (static_cast<float>(bits >> 40) + 1.f) * (1.f / 16777217.f);  // (0, 1]
  const float u2 = static_cast<float>((bits >> 16) & 0xFFFFFF) * (1.f / 16777216.f);
  return sqrtf(-2.f * logf(u1)) * cospif(2.f * u2) * scale;
}

// One block per (head, sample): its amax and descale.
// keep_zero: an all-zero head writes 0 instead of 1, for e4m3_share_descale_kernel to skip.
__global__ void e4m3_descale_kernel(float* descales, int seq_len, int heads, int d_head,
                                    std::uint64_t seed, float scale, bool keep_zero) {
  const int head = static_cast<int>(blockIdx.x);
  const int sample = static_cast<int>(blockIdx.y);
  const std::uint64_t mixed_seed = splitmix64(seed);
  float amax = 0.f;
  const std::int64_t per_head = static_cast<std::int64_t>(seq_len) * d_head;
  for (std::int64_t j = threadIdx.x; j < per_head; j += blockDim.x) {
    const std::int64_t position = j / d_head;
    const std::int64_t i =
        ((static_cast<std::int64_t>(sample) * seq_len + position) * heads + head) * d_head +
        j % d_head;
    amax = fmaxf(amax, fabsf(normal_value(mixed_seed, i, scale)));
  }
  __shared__ float partial[256];
  partial[threadIdx.x] = amax;
  __syncthreads();
  for (int width = blockDim.x / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width)
      partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + width]);
    __syncthreads();
  }
  if (threadIdx.x == 0)
    descales[sample * heads + head] = partial[0] > 0.f || keep_zero ? partial[0] / 448.f : 1.f;
}

// One block: every one of the `count` per-(sample, head) descales becomes their maximum, the
// descale of the tensor's amax (1 for an all-zero tensor). A descale is amax / 448, so the largest
// is the whole tensor's.
__global__ void e4m3_share_descale_kernel(float* descales, int count) {
  float largest = 0.f;
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    largest = fmaxf(largest, descales[i]);
  __shared__ float partial[256];
  partial[threadIdx.x] = largest;
  __syncthreads();
  for (int width = blockDim.x / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width)
      partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + width]);
    __syncthreads();
  }
  const float shared = partial[0] > 0.f ? partial[0] : 1.f;
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    descales[i] = shared;
}

__global__ void e4m3_quantize_kernel(std::uint8_t* codes, const float* descales, std::int64_t count,
                                     int seq_len, int heads, int d_head, std::uint64_t seed,
                                     float scale) {
  const std::uint64_t mixed_seed = splitmix64(seed);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / d_head;  // (sample · seq_len + position) · heads + head
    const int head = static_cast<int>(row % heads);
    const std::int64_t sample = row / heads / seq_len;
    const float descale = descales[sample * heads + head];
    const float scaled = normal_value(mixed_seed, i, scale) / descale;
    // Nearest, ties to even, saturating (cvt.rn.satfinite on sm_89+, emulated on sm_80).
    codes[i] = static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(scaled, __NV_SATFINITE, __NV_E4M3));
  }
}

// ---- The accuracy step's quantizer --------------------------------------------------------------

__global__ void random_fp32_kernel(float* values, std::int64_t count, int d_head,
                                   std::uint64_t seed, float scale, bool outliers) {
  const std::uint64_t mixed_seed = splitmix64(seed);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float value = normal_value(mixed_seed, i, scale);
    if (outliers) {
      const int channel = static_cast<int>(i % d_head);
      for (int c = 0; c < kOutlierChannels; ++c)
        if (channel == outlier_channel(c, d_head)) value *= kOutlierFactor;
    }
    values[i] = value;
  }
}

// One 256-thread block per 256 / d_head rows, the rows in shared memory: signs, then log2(d)
// butterfly stages (a, b) -> (a + b, a - b) of the Sylvester Hadamard matrix, then 1 / sqrt(d).
__global__ void rotate_rows_kernel(float* values, std::int64_t rows, int d_head,
                                   const float* signs) {
  __shared__ float tile[256];
  const int rows_per_block = 256 / d_head;
  const int local_row = static_cast<int>(threadIdx.x) / d_head;
  const int column = static_cast<int>(threadIdx.x) % d_head;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * rows_per_block + local_row;
  const bool active = local_row < rows_per_block && row < rows;
  if (active) tile[threadIdx.x] = values[row * d_head + column] * signs[column];
  __syncthreads();
  for (int half = 1; half < d_head; half *= 2) {
    float out = 0.f;
    if (active) {
      const int partner = static_cast<int>(threadIdx.x) ^ half;
      out = (column & half) ? tile[partner] - tile[threadIdx.x] : tile[threadIdx.x] + tile[partner];
    }
    __syncthreads();
    if (active) tile[threadIdx.x] = out;
    __syncthreads();
  }
  if (active)
    values[row * d_head + column] = tile[threadIdx.x] * rsqrtf(static_cast<float>(d_head));
}

// One 256-thread block per (head, block, sample): the block's amax and descale.
__global__ void block_descale_kernel(const float* values, float* descales, int seq_len, int heads,
                                     int d_head, int block_rows) {
  const int head = static_cast<int>(blockIdx.x);
  const int block = static_cast<int>(blockIdx.y);
  const int sample = static_cast<int>(blockIdx.z);
  const int blocks = static_cast<int>(gridDim.y);
  const int first = block * block_rows;
  const int rows = min(block_rows, seq_len - first);
  float amax = 0.f;
  for (std::int64_t j = threadIdx.x; j < static_cast<std::int64_t>(rows) * d_head;
       j += blockDim.x) {
    const std::int64_t position = first + j / d_head;
    amax = fmaxf(
        amax,
        fabsf(values[((static_cast<std::int64_t>(sample) * seq_len + position) * heads + head) *
                         d_head +
                     j % d_head]));
  }
  __shared__ float partial[256];
  partial[threadIdx.x] = amax;
  __syncthreads();
  for (int width = blockDim.x / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width)
      partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + width]);
    __syncthreads();
  }
  if (threadIdx.x == 0)
    descales[(static_cast<std::int64_t>(sample) * heads + head) * blocks + block] =
        partial[0] > 0.f ? partial[0] / 448.f : 1.f;
}

// One 32-thread block per (head, sample): the head's largest block descale D, then each block's
// descale d becomes D · 2^-k with k the largest integer for which D · 2^-k >= d (quantize_e4m3's
// power_of_two_ratios). Scaling by a power of two is exact, so the ratios are exact too.
__global__ void power_of_two_ratios_kernel(float* descales, int heads, int blocks) {
  float* const head_descales =
      descales + (static_cast<std::int64_t>(blockIdx.y) * heads + blockIdx.x) * blocks;
  float largest = 0.f;
  for (int block = threadIdx.x; block < blocks; block += blockDim.x)
    largest = fmaxf(largest, head_descales[block]);
  for (int offset = 16; offset > 0; offset /= 2)
    largest = fmaxf(largest, __shfl_xor_sync(0xffffffffu, largest, offset));
  for (int block = threadIdx.x; block < blocks; block += blockDim.x) {
    const float own = head_descales[block];
    float descale = largest;
    while (ldexpf(descale, -1) >= own)
      descale = ldexpf(descale, -1);
    head_descales[block] = descale;
  }
}

__global__ void block_quantize_kernel(const float* values, std::uint8_t* codes,
                                      const float* descales, std::int64_t count, int seq_len,
                                      int heads, int d_head, int block_rows) {
  const int blocks = (seq_len + block_rows - 1) / block_rows;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / d_head;  // (sample · seq_len + position) · heads + head
    const int head = static_cast<int>(row % heads);
    const int position = static_cast<int>(row / heads % seq_len);
    const std::int64_t sample = row / heads / seq_len;
    const float descale = descales[(sample * heads + head) * blocks + position / block_rows];
    codes[i] = static_cast<std::uint8_t>(
        __nv_cvt_float_to_fp8(values[i] / descale, __NV_SATFINITE, __NV_E4M3));
  }
}

__global__ void dequantize_e4m3_kernel(const std::uint8_t* codes, float descale, __nv_bfloat16* out,
                                       std::int64_t count) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    // Every e4m3 value is exact in fp16, and the product is rounded once, to bf16.
    const __half value(__nv_cvt_fp8_to_halfraw(codes[i], __NV_E4M3));
    out[i] = __float2bfloat16_rn(__half2float(value) * descale);
  }
}

__global__ void poison_kernel(std::uint16_t* data, std::int64_t count) {
  // 0x7FFF is a quiet NaN in both fp16 and bf16.
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    data[i] = 0x7FFF;
}

struct DeviceErrorStats {
  unsigned int max_abs_bits;  // non-negative floats order like their bit patterns
  double sum_abs;
  unsigned long long nan_count;
};

template <DType kDType>
__global__ void compare_kernel(const typename Element<kDType>::type* a,
                               const typename Element<kDType>::type* b, std::int64_t count,
                               DeviceErrorStats* stats) {
  float local_max = 0.f;
  double local_sum = 0.0;
  unsigned long long local_nan = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float x = Element<kDType>::to_float(a[i]);
    const float y = Element<kDType>::to_float(b[i]);
    if (isnan(x) || isnan(y)) {
      ++local_nan;
      continue;
    }
    const float diff = fabsf(x - y);
    local_max = fmaxf(local_max, diff);
    local_sum += diff;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    local_max = fmaxf(local_max, __shfl_xor_sync(0xffffffffu, local_max, offset));
    local_sum += __shfl_xor_sync(0xffffffffu, local_sum, offset);
    local_nan += __shfl_xor_sync(0xffffffffu, local_nan, offset);
  }
  if (threadIdx.x % 32 == 0) {
    atomicMax(&stats->max_abs_bits, __float_as_uint(local_max));
    atomicAdd(&stats->sum_abs, local_sum);
    atomicAdd(&stats->nan_count, local_nan);
  }
}

unsigned int grid_for(std::int64_t count) {
  const std::int64_t blocks = (count + 255) / 256;
  return static_cast<unsigned int>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

template <DType kDType, bool kLowPrecision>
void launch_reference(const Problem& shape, const void* q, const void* k, const void* v, void* o,
                      cudaStream_t stream) {
  using T = typename Element<kDType>::type;
  const int d = shape.d_head;
  const std::size_t smem = sizeof(float) * (kRowsPerBlock * d + kKeysPerTile * (d + 1) +
                                            kRowsPerBlock * kKeysPerTile + 2 * kRowsPerBlock);
  auto* kernel = &reference_attention_kernel<kDType, kLowPrecision>;
  if (smem > 48 * 1024)
    FS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem)));
  const dim3 grid((shape.seq_len + kRowsPerBlock - 1) / kRowsPerBlock, shape.heads, shape.batch);
  kernel<<<grid, kThreads, smem, stream>>>(shape, static_cast<const T*>(q),
                                           static_cast<const T*>(k), static_cast<const T*>(v),
                                           static_cast<T*>(o));
  FS_CUDA_CHECK(cudaGetLastError());
}

// The kernels below are instantiated for the 16-bit dtypes; an e4m3 buffer is half the size, so
// writing or reading it as 16-bit would run past it. e4m3's reference is the CPU one of
// fp8_reference.hpp (docs/spec/fp8-track.md §2).
void require_16_bit(DType dtype, const char* what) {
  if (element_bytes(dtype) != 2)
    throw std::invalid_argument(std::string(what) + " runs fp16 and bf16 only, not " +
                                std::string(dtype_lower_name(dtype)));
}

void check_shape(const Problem& shape) {
  if (const auto violation = problem_violation(shape))
    throw std::invalid_argument("reference attention: " + *violation);
  require_16_bit(shape.dtype, "the GPU reference attention");
  if (shape.pass != Pass::forward)
    throw std::invalid_argument(
        "reference attention computes the forward pass; the backward's "
        "references are reference_backward.hpp's");
  if (shape.d_head > kThreads * kMaxColumnsPerThread)
    throw std::invalid_argument("reference attention supports d_head <= " +
                                std::to_string(kThreads * kMaxColumnsPerThread) + ", got " +
                                std::to_string(shape.d_head));
}

std::size_t output_bytes(const Problem& problem) {
  return static_cast<std::size_t>(problem.query_elements()) *
         element_bytes(output_dtype(problem.dtype));
}

}  // namespace

void gpu_reference_attention(const Problem& shape, ReferencePrecision precision, const void* q,
                             const void* k, const void* v, void* o, cudaStream_t stream) {
  check_shape(shape);
  const bool low = precision == ReferencePrecision::low_precision;
  if (shape.dtype == DType::FP16) {
    low ? launch_reference<DType::FP16, true>(shape, q, k, v, o, stream)
        : launch_reference<DType::FP16, false>(shape, q, k, v, o, stream);
  } else {
    low ? launch_reference<DType::BF16, true>(shape, q, k, v, o, stream)
        : launch_reference<DType::BF16, false>(shape, q, k, v, o, stream);
  }
}

void fill_random_normal(void* data, DType dtype, std::int64_t count, std::uint64_t seed,
                        float scale, cudaStream_t stream) {
  require_16_bit(dtype, "fill_random_normal");
  if (dtype == DType::FP16)
    random_normal_kernel<DType::FP16>
        <<<grid_for(count), 256, 0, stream>>>(static_cast<__half*>(data), count, seed, scale);
  else
    random_normal_kernel<DType::BF16><<<grid_for(count), 256, 0, stream>>>(
        static_cast<__nv_bfloat16*>(data), count, seed, scale);
  FS_CUDA_CHECK(cudaGetLastError());
}

void fill_random_e4m3(void* codes, float* descales, int batch, int seq_len, int heads, int d_head,
                      std::uint64_t seed, float scale, cudaStream_t stream, E4m3Scaling scaling) {
  const bool per_tensor = scaling == E4m3Scaling::per_tensor;
  e4m3_descale_kernel<<<dim3(static_cast<unsigned>(heads), static_cast<unsigned>(batch)), 256, 0,
                        stream>>>(descales, seq_len, heads, d_head, seed, scale, per_tensor);
  FS_CUDA_CHECK(cudaGetLastError());
  if (per_tensor) {
    e4m3_share_descale_kernel<<<1, 256, 0, stream>>>(descales, batch * heads);
    FS_CUDA_CHECK(cudaGetLastError());
  }
  const std::int64_t count = static_cast<std::int64_t>(batch) * seq_len * heads * d_head;
  e4m3_quantize_kernel<<<grid_for(count), 256, 0, stream>>>(
      static_cast<std::uint8_t*>(codes), descales, count, seq_len, heads, d_head, seed, scale);
  FS_CUDA_CHECK(cudaGetLastError());
}

void fill_random_fp32(float* values, int batch, int seq_len, int heads, int d_head,
                      std::uint64_t seed, float scale, bool outliers, cudaStream_t stream) {
  const std::int64_t count = static_cast<std::int64_t>(batch) * seq_len * heads * d_head;
  random_fp32_kernel<<<grid_for(count), 256, 0, stream>>>(values, count, d_head, seed, scale,
                                                          outliers);
  FS_CUDA_CHECK(cudaGetLastError());
}

void rotate_rows_fp32(float* values, std::int64_t rows, int d_head, const float* signs,
                      cudaStream_t stream) {
  if (d_head < 1 || d_head > 256 || (d_head & (d_head - 1)) != 0)
    throw std::invalid_argument("rotate_rows_fp32: d_head " + std::to_string(d_head) +
                                " is not a power of two up to 256");
  const std::int64_t rows_per_block = 256 / d_head;
  rotate_rows_kernel<<<static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block), 256, 0,
                       stream>>>(values, rows, d_head, signs);
  FS_CUDA_CHECK(cudaGetLastError());
}

void quantize_e4m3(const float* values, void* codes, float* descales, int batch, int seq_len,
                   int heads, int d_head, int block_rows, cudaStream_t stream,
                   bool power_of_two_ratios) {
  if (block_rows < 1 || block_rows > seq_len)
    throw std::invalid_argument("quantize_e4m3: block_rows " + std::to_string(block_rows) +
                                " is not 1 to seq_len = " + std::to_string(seq_len));
  const int blocks = (seq_len + block_rows - 1) / block_rows;
  block_descale_kernel<<<dim3(static_cast<unsigned>(heads), static_cast<unsigned>(blocks),
                              static_cast<unsigned>(batch)),
                         256, 0, stream>>>(values, descales, seq_len, heads, d_head, block_rows);
  FS_CUDA_CHECK(cudaGetLastError());
  if (power_of_two_ratios) {
    power_of_two_ratios_kernel<<<dim3(static_cast<unsigned>(heads), static_cast<unsigned>(batch)),
                                 32, 0, stream>>>(descales, heads, blocks);
    FS_CUDA_CHECK(cudaGetLastError());
  }
  const std::int64_t count = static_cast<std::int64_t>(batch) * seq_len * heads * d_head;
  block_quantize_kernel<<<grid_for(count), 256, 0, stream>>>(
      values, static_cast<std::uint8_t*>(codes), descales, count, seq_len, heads, d_head,
      block_rows);
  FS_CUDA_CHECK(cudaGetLastError());
}

void dequantize_e4m3_to_bf16(const void* codes, float descale, void* out, std::int64_t count,
                             cudaStream_t stream) {
  dequantize_e4m3_kernel<<<grid_for(count), 256, 0, stream>>>(
      static_cast<const std::uint8_t*>(codes), descale, static_cast<__nv_bfloat16*>(out), count);
  FS_CUDA_CHECK(cudaGetLastError());
}

void poison_output(void* data, DType, std::int64_t count, cudaStream_t stream) {
  poison_kernel<<<grid_for(count), 256, 0, stream>>>(static_cast<std::uint16_t*>(data), count);
  FS_CUDA_CHECK(cudaGetLastError());
}

ErrorStats compare_outputs(const void* a, const void* b, DType dtype, std::int64_t count,
                           cudaStream_t stream) {
  require_16_bit(dtype, "compare_outputs");
  DeviceErrorStats* device_stats = nullptr;
  FS_CUDA_CHECK(
      cudaMallocAsync(reinterpret_cast<void**>(&device_stats), sizeof(DeviceErrorStats), stream));
  FS_CUDA_CHECK(cudaMemsetAsync(device_stats, 0, sizeof(DeviceErrorStats), stream));
  if (dtype == DType::FP16)
    compare_kernel<DType::FP16><<<grid_for(count), 256, 0, stream>>>(
        static_cast<const __half*>(a), static_cast<const __half*>(b), count, device_stats);
  else
    compare_kernel<DType::BF16><<<grid_for(count), 256, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(b), count,
        device_stats);
  FS_CUDA_CHECK(cudaGetLastError());
  DeviceErrorStats host_stats{};
  FS_CUDA_CHECK(cudaMemcpyAsync(&host_stats, device_stats, sizeof host_stats,
                                cudaMemcpyDeviceToHost, stream));
  FS_CUDA_CHECK(cudaFreeAsync(device_stats, stream));
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  ErrorStats stats;
  float max_abs = 0.f;
  std::memcpy(&max_abs, &host_stats.max_abs_bits, sizeof max_abs);
  stats.max_abs = max_abs;
  stats.nan_count = static_cast<std::int64_t>(host_stats.nan_count);
  const std::int64_t finite = count - stats.nan_count;
  stats.mean_abs = finite > 0 ? host_stats.sum_abs / static_cast<double>(finite) : 0.0;
  return stats;
}

std::string CorrectnessVerdict::summary() const {
  char text[256];
  std::snprintf(text, sizeof text,
                "%s: max|O-R_lp| = %.3g %s 2 x max|R_lp-R_32| = %.3g; vs fp32: max %.3g, mean "
                "%.3g; NaN %lld",
                passed ? "pass" : "FAIL", err_kernel, err_kernel <= 2 * err_ref ? "<=" : ">",
                2 * err_ref, vs_fp32.max_abs, vs_fp32.mean_abs, static_cast<long long>(nan_count));
  return text;
}

ReferenceOutputs::ReferenceOutputs(const Problem& problem, const void* q, const void* k,
                                   const void* v, cudaStream_t stream)
    : problem_(problem) {
  check_shape(problem);
  const std::size_t bytes = output_bytes(problem);
  FS_CUDA_CHECK(cudaMalloc(&low_precision_, bytes));
  const cudaError_t second = cudaMalloc(&fp32_, bytes);
  if (second != cudaSuccess) {
    cudaFree(low_precision_);
    throw_cuda_error(second, "cudaMalloc(&fp32_, bytes)", __FILE__, __LINE__);
  }
  gpu_reference_attention(problem, ReferencePrecision::low_precision, q, k, v, low_precision_,
                          stream);
  gpu_reference_attention(problem, ReferencePrecision::fp32, q, k, v, fp32_, stream);
  reference_gap_ =
      compare_outputs(low_precision_, fp32_, problem.dtype, problem.query_elements(), stream)
          .max_abs;
}

ReferenceOutputs::~ReferenceOutputs() {
  cudaFree(low_precision_);
  cudaFree(fp32_);
}

CorrectnessVerdict ReferenceOutputs::check(const void* o, cudaStream_t stream) const {
  CorrectnessVerdict verdict;
  const std::int64_t count = problem_.query_elements();
  const ErrorStats vs_low = compare_outputs(o, low_precision_, problem_.dtype, count, stream);
  verdict.vs_fp32 = compare_outputs(o, fp32_, problem_.dtype, count, stream);
  verdict.err_kernel = vs_low.max_abs;
  verdict.err_ref = reference_gap_;
  verdict.nan_count = vs_low.nan_count;
  verdict.passed = vs_low.nan_count == 0 && verdict.err_kernel <= 2 * verdict.err_ref;
  return verdict;
}

}  // namespace flashscope
