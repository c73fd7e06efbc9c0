// The GPU reference backward, the forward with the log-sum-exp it starts from, and the rule of
// docs/spec/backward-track.md §2. Plain CUDA-core code on purpose: it must be obviously right,
// not fast. Every CTA owns kRows rows (queries or keys) of one (sample, head) and walks the other
// side in tiles of kTile rows held in fp32 shared memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/reference_elements.cuh"
#include "kernels/common/reference_backward.hpp"

namespace flashscope {

namespace {

using reference_elements::Element;
using reference_elements::round_to;

constexpr int kRows = 16;  // rows a CTA owns (queries, or keys for dK and dV)
constexpr int kTile = 32;  // rows of the other side per shared-memory tile
constexpr int kThreads = 128;
constexpr int kMaxColumnsPerThread = 2;  // d_head <= 256

// Element offset of row `s` of head `h` in sample `b` of a contiguous [B, N, H, d] tensor.
__device__ long long row_offset(const Problem& shape, int b, int s, int h) {
  return ((static_cast<long long>(b) * shape.seq_len + s) * shape.heads + h) * shape.d_head;
}
// Index of (b, h, i) in a [B, H, N] fp32 row vector (L, D).
__device__ long long vector_index(const Problem& shape, int b, int h, int i) {
  return (static_cast<long long>(b) * shape.heads + h) * shape.seq_len + i;
}

// Copies `count` rows of the tensor starting at row `first` into `tile` (fp32, `pitch` floats a
// row); rows past `count` (up to `rows`) become 0.
template <DType kDType>
__device__ void load_rows(float* tile, int pitch, int rows, const typename Element<kDType>::type* x,
                          const Problem& shape, int b, int h, int first, int count) {
  const int d = shape.d_head;
  for (int i = threadIdx.x; i < rows * d; i += blockDim.x) {
    const int r = i / d;
    const int c = i % d;
    tile[r * pitch + c] =
        r < count ? Element<kDType>::to_float(x[row_offset(shape, b, first + r, h) + c]) : 0.f;
  }
}

// ---- Forward with the log-sum-exp (fp32 accumulation) ------------------------------------------

// Pass 1 finds each query row's max and sum of exponentials, pass 2 accumulates P·V with the
// normalised P; O is rounded once, L = m + ln(l) is written in fp32.
template <DType kDType>
__global__ void forward_with_lse_kernel(Problem shape, const typename Element<kDType>::type* q,
                                        const typename Element<kDType>::type* k,
                                        const typename Element<kDType>::type* v,
                                        typename Element<kDType>::type* o, float* lse) {
  extern __shared__ float shared[];
  const int d = shape.d_head;
  const int pitch = d + 1;
  float* q_tile = shared;                   // [kRows][d]
  float* kv_tile = q_tile + kRows * d;      // [kTile][pitch]
  float* scores = kv_tile + kTile * pitch;  // [kRows][kTile]
  float* row_max = scores + kRows * kTile;  // [kRows]
  float* row_sum = row_max + kRows;         // [kRows]
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  const int first_row = blockIdx.x * kRows;
  const int rows = min(kRows, shape.seq_len - first_row);
  const float scale = rsqrtf(static_cast<float>(d));

  load_rows<kDType>(q_tile, d, kRows, q, shape, b, h, first_row, rows);
  if (threadIdx.x < kRows) {
    row_max[threadIdx.x] = -INFINITY;
    row_sum[threadIdx.x] = 0.f;
  }
  const int key_end = shape.causal ? min(shape.seq_len, first_row + kRows) : shape.seq_len;
  const auto compute_scores = [&](int first_key, int keys) {
    for (int i = threadIdx.x; i < kRows * kTile; i += blockDim.x) {
      const int r = i / kTile;
      const int j = i % kTile;
      float dot = 0.f;
      for (int c = 0; c < d; ++c)
        dot += q_tile[r * d + c] * kv_tile[j * pitch + c];
      const bool masked = shape.causal && first_key + j > first_row + r;
      scores[i] = j < keys && !masked ? dot * scale : -INFINITY;
    }
  };
  for (int first_key = 0; first_key < key_end; first_key += kTile) {
    const int keys = min(kTile, key_end - first_key);
    __syncthreads();
    load_rows<kDType>(kv_tile, pitch, kTile, k, shape, b, h, first_key, keys);
    __syncthreads();
    compute_scores(first_key, keys);
    __syncthreads();
    if (threadIdx.x < kRows) {
      const int r = threadIdx.x;
      float m = row_max[r];
      for (int j = 0; j < keys; ++j)
        m = fmaxf(m, scores[r * kTile + j]);
      float l = row_sum[r] * expf(row_max[r] - m);
      for (int j = 0; j < keys; ++j)
        l += expf(scores[r * kTile + j] - m);
      row_max[r] = m;
      row_sum[r] = l;
    }
  }
  float accumulator[kMaxColumnsPerThread][kRows] = {};
  for (int first_key = 0; first_key < key_end; first_key += kTile) {
    const int keys = min(kTile, key_end - first_key);
    __syncthreads();
    load_rows<kDType>(kv_tile, pitch, kTile, k, shape, b, h, first_key, keys);
    __syncthreads();
    compute_scores(first_key, keys);
    __syncthreads();
    for (int i = threadIdx.x; i < kRows * kTile; i += blockDim.x) {
      const int r = i / kTile;
      scores[i] = expf(scores[i] - row_max[r]) / row_sum[r];
    }
    __syncthreads();
    load_rows<kDType>(kv_tile, pitch, kTile, v, shape, b, h, first_key, keys);
    __syncthreads();
    for (int slot = 0; slot < kMaxColumnsPerThread; ++slot) {
      const int c = threadIdx.x + slot * blockDim.x;
      if (c >= d) break;
      for (int j = 0; j < keys; ++j) {
        const float value = kv_tile[j * pitch + c];
#pragma unroll
        for (int r = 0; r < kRows; ++r)
          accumulator[slot][r] += scores[r * kTile + j] * value;
      }
    }
  }
  for (int slot = 0; slot < kMaxColumnsPerThread; ++slot) {
    const int c = threadIdx.x + slot * blockDim.x;
    if (c >= d) break;
    for (int r = 0; r < rows; ++r)
      o[row_offset(shape, b, first_row + r, h) + c] =
          Element<kDType>::from_float(accumulator[slot][r]);
  }
  if (threadIdx.x < rows)
    lse[vector_index(shape, b, h, first_row + threadIdx.x)] =
        row_max[threadIdx.x] + logf(row_sum[threadIdx.x]);
}

// ---- Backward ----------------------------------------------------------------------------------

// Low precision: L as the forward gave it, D = rowsum(dO ∘ O) of the given (16-bit) O, summed in
// fp32. One thread per row.
template <DType kDType>
__global__ void given_statistics_kernel(Problem shape, const typename Element<kDType>::type* o,
                                        const typename Element<kDType>::type* d_o,
                                        const float* lse_in, float* lse_out, float* d_out) {
  const long long rows = static_cast<long long>(shape.batch) * shape.heads * shape.seq_len;
  for (long long index = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       index < rows; index += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(index % shape.seq_len);
    const int h = static_cast<int>(index / shape.seq_len % shape.heads);
    const int b = static_cast<int>(index / shape.seq_len / shape.heads);
    const long long base = row_offset(shape, b, i, h);
    float sum = 0.f;
    for (int c = 0; c < shape.d_head; ++c)
      sum += Element<kDType>::to_float(d_o[base + c]) * Element<kDType>::to_float(o[base + c]);
    lse_out[index] = lse_in[index];
    d_out[index] = sum;
  }
}

// fp32: L recomputed from the scores (pass 1), then D = rowsum(P ∘ dP) with P = exp(S - L) and
// dP = dO·Vᵀ (pass 2), which is rowsum(dO ∘ O) for the exact O.
template <DType kDType>
__global__ void fp32_statistics_kernel(Problem shape, const typename Element<kDType>::type* q,
                                       const typename Element<kDType>::type* k,
                                       const typename Element<kDType>::type* v,
                                       const typename Element<kDType>::type* d_o, float* lse_out,
                                       float* d_out) {
  extern __shared__ float shared[];
  const int d = shape.d_head;
  const int pitch = d + 1;
  float* q_tile = shared;                   // [kRows][d]
  float* do_tile = q_tile + kRows * d;      // [kRows][d]
  float* k_tile = do_tile + kRows * d;      // [kTile][pitch]
  float* v_tile = k_tile + kTile * pitch;   // [kTile][pitch]
  float* scores = v_tile + kTile * pitch;   // [kRows][kTile]
  float* row_max = scores + kRows * kTile;  // [kRows]
  float* row_sum = row_max + kRows;         // [kRows]
  float* row_d = row_sum + kRows;           // [kRows]
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  const int first_row = blockIdx.x * kRows;
  const int rows = min(kRows, shape.seq_len - first_row);
  const float scale = rsqrtf(static_cast<float>(d));

  load_rows<kDType>(q_tile, d, kRows, q, shape, b, h, first_row, rows);
  load_rows<kDType>(do_tile, d, kRows, d_o, shape, b, h, first_row, rows);
  if (threadIdx.x < kRows) {
    row_max[threadIdx.x] = -INFINITY;
    row_sum[threadIdx.x] = 0.f;
    row_d[threadIdx.x] = 0.f;
  }
  const int key_end = shape.causal ? min(shape.seq_len, first_row + kRows) : shape.seq_len;
  for (int first_key = 0; first_key < key_end; first_key += kTile) {
    const int keys = min(kTile, key_end - first_key);
    __syncthreads();
    load_rows<kDType>(k_tile, pitch, kTile, k, shape, b, h, first_key, keys);
    __syncthreads();
    for (int i = threadIdx.x; i < kRows * kTile; i += blockDim.x) {
      const int r = i / kTile;
      const int j = i % kTile;
      float dot = 0.f;
      for (int c = 0; c < d; ++c)
        dot += q_tile[r * d + c] * k_tile[j * pitch + c];
      const bool masked = shape.causal && first_key + j > first_row + r;
      scores[i] = j < keys && !masked ? dot * scale : -INFINITY;
    }
    __syncthreads();
    if (threadIdx.x < kRows) {
      const int r = threadIdx.x;
      float m = row_max[r];
      for (int j = 0; j < keys; ++j)
        m = fmaxf(m, scores[r * kTile + j]);
      float l = row_sum[r] * expf(row_max[r] - m);
      for (int j = 0; j < keys; ++j)
        l += expf(scores[r * kTile + j] - m);
      row_max[r] = m;
      row_sum[r] = l;
    }
  }
  __syncthreads();
  if (threadIdx.x < kRows) row_max[threadIdx.x] += logf(row_sum[threadIdx.x]);  // now L
  for (int first_key = 0; first_key < key_end; first_key += kTile) {
    const int keys = min(kTile, key_end - first_key);
    __syncthreads();
    load_rows<kDType>(k_tile, pitch, kTile, k, shape, b, h, first_key, keys);
    load_rows<kDType>(v_tile, pitch, kTile, v, shape, b, h, first_key, keys);
    __syncthreads();
    for (int i = threadIdx.x; i < kRows * kTile; i += blockDim.x) {
      const int r = i / kTile;
      const int j = i % kTile;
      float dot = 0.f;
      float dp = 0.f;
      for (int c = 0; c < d; ++c) {
        dot += q_tile[r * d + c] * k_tile[j * pitch + c];
        dp += do_tile[r * d + c] * v_tile[j * pitch + c];
      }
      const bool masked = j >= keys || (shape.causal && first_key + j > first_row + r);
      scores[i] = masked ? 0.f : expf(dot * scale - row_max[r]) * dp;
    }
    __syncthreads();
    if (threadIdx.x < kRows) {
      float sum = row_d[threadIdx.x];
      for (int j = 0; j < keys; ++j)
        sum += scores[threadIdx.x * kTile + j];
      row_d[threadIdx.x] = sum;
    }
  }
  __syncthreads();
  if (threadIdx.x < rows) {
    lse_out[vector_index(shape, b, h, first_row + threadIdx.x)] = row_max[threadIdx.x];
    d_out[vector_index(shape, b, h, first_row + threadIdx.x)] = row_d[threadIdx.x];
  }
}

// dQ = scale · sum_j dS_ij K_j for the CTA's query rows, dS = P ∘ (dP - D), P = exp(S - L).
// Low precision rounds P before it enters dS and dS before it enters the product.
template <DType kDType, bool kLowPrecision>
__global__ void dq_kernel(Problem shape, const typename Element<kDType>::type* q,
                          const typename Element<kDType>::type* k,
                          const typename Element<kDType>::type* v,
                          const typename Element<kDType>::type* d_o, const float* lse,
                          const float* row_d, typename Element<kDType>::type* dq) {
  extern __shared__ float shared[];
  const int d = shape.d_head;
  const int pitch = d + 1;
  float* q_tile = shared;                  // [kRows][d]
  float* do_tile = q_tile + kRows * d;     // [kRows][d]
  float* k_tile = do_tile + kRows * d;     // [kTile][pitch]
  float* v_tile = k_tile + kTile * pitch;  // [kTile][pitch]
  float* ds = v_tile + kTile * pitch;      // [kRows][kTile]
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  const int first_row = blockIdx.x * kRows;
  const int rows = min(kRows, shape.seq_len - first_row);
  const float scale = rsqrtf(static_cast<float>(d));

  load_rows<kDType>(q_tile, d, kRows, q, shape, b, h, first_row, rows);
  load_rows<kDType>(do_tile, d, kRows, d_o, shape, b, h, first_row, rows);
  float accumulator[kMaxColumnsPerThread][kRows] = {};
  const int key_end = shape.causal ? min(shape.seq_len, first_row + kRows) : shape.seq_len;
  for (int first_key = 0; first_key < key_end; first_key += kTile) {
    const int keys = min(kTile, key_end - first_key);
    __syncthreads();
    load_rows<kDType>(k_tile, pitch, kTile, k, shape, b, h, first_key, keys);
    load_rows<kDType>(v_tile, pitch, kTile, v, shape, b, h, first_key, keys);
    __syncthreads();
    for (int i = threadIdx.x; i < kRows * kTile; i += blockDim.x) {
      const int r = i / kTile;
      const int j = i % kTile;
      const bool masked = r >= rows || j >= keys || (shape.causal && first_key + j > first_row + r);
      float value = 0.f;
      if (!masked) {
        float dot = 0.f;
        float dp = 0.f;
        for (int c = 0; c < d; ++c) {
          dot += q_tile[r * d + c] * k_tile[j * pitch + c];
          dp += do_tile[r * d + c] * v_tile[j * pitch + c];
        }
        const long long row = vector_index(shape, b, h, first_row + r);
        float p = expf(dot * scale - lse[row]);
        if constexpr (kLowPrecision) p = round_to<kDType>(p);
        value = p * (dp - row_d[row]);
        if constexpr (kLowPrecision) value = round_to<kDType>(value);
      }
      ds[i] = value;
    }
    __syncthreads();
    for (int slot = 0; slot < kMaxColumnsPerThread; ++slot) {
      const int c = threadIdx.x + slot * blockDim.x;
      if (c >= d) break;
      for (int j = 0; j < keys; ++j) {
        const float value = k_tile[j * pitch + c];
#pragma unroll
        for (int r = 0; r < kRows; ++r)
          accumulator[slot][r] += ds[r * kTile + j] * value;
      }
    }
  }
  for (int slot = 0; slot < kMaxColumnsPerThread; ++slot) {
    const int c = threadIdx.x + slot * blockDim.x;
    if (c >= d) break;
    for (int r = 0; r < rows; ++r)
      dq[row_offset(shape, b, first_row + r, h) + c] =
          Element<kDType>::from_float(scale * accumulator[slot][r]);
  }
}

// dV = sum_i P_ij dO_i and dK = scale · sum_i dS_ij Q_i for the CTA's key rows j.
template <DType kDType, bool kLowPrecision>
__global__ void dkdv_kernel(Problem shape, const typename Element<kDType>::type* q,
                            const typename Element<kDType>::type* k,
                            const typename Element<kDType>::type* v,
                            const typename Element<kDType>::type* d_o, const float* lse,
                            const float* row_d, typename Element<kDType>::type* dk,
                            typename Element<kDType>::type* dv) {
  extern __shared__ float shared[];
  const int d = shape.d_head;
  const int pitch = d + 1;
  float* k_rows = shared;                   // [kRows][d]
  float* v_rows = k_rows + kRows * d;       // [kRows][d]
  float* q_tile = v_rows + kRows * d;       // [kTile][pitch]
  float* do_tile = q_tile + kTile * pitch;  // [kTile][pitch]
  float* p = do_tile + kTile * pitch;       // [kRows][kTile]
  float* ds = p + kRows * kTile;            // [kRows][kTile]
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  const int first_key = blockIdx.x * kRows;
  const int keys = min(kRows, shape.seq_len - first_key);
  const float scale = rsqrtf(static_cast<float>(d));

  load_rows<kDType>(k_rows, d, kRows, k, shape, b, h, first_key, keys);
  load_rows<kDType>(v_rows, d, kRows, v, shape, b, h, first_key, keys);
  float dk_accumulator[kMaxColumnsPerThread][kRows] = {};
  float dv_accumulator[kMaxColumnsPerThread][kRows] = {};
  // Causal: queries before the CTA's first key are masked for all of its keys.
  const int query_begin = shape.causal ? first_key / kTile * kTile : 0;
  for (int first_query = query_begin; first_query < shape.seq_len; first_query += kTile) {
    const int queries = min(kTile, shape.seq_len - first_query);
    __syncthreads();
    load_rows<kDType>(q_tile, pitch, kTile, q, shape, b, h, first_query, queries);
    load_rows<kDType>(do_tile, pitch, kTile, d_o, shape, b, h, first_query, queries);
    __syncthreads();
    for (int i = threadIdx.x; i < kRows * kTile; i += blockDim.x) {
      const int r = i / kTile;  // key
      const int j = i % kTile;  // query
      const bool masked =
          r >= keys || j >= queries || (shape.causal && first_key + r > first_query + j);
      float probability = 0.f;
      float value = 0.f;
      if (!masked) {
        float dot = 0.f;
        float dp = 0.f;
        for (int c = 0; c < d; ++c) {
          dot += k_rows[r * d + c] * q_tile[j * pitch + c];
          dp += v_rows[r * d + c] * do_tile[j * pitch + c];
        }
        const long long row = vector_index(shape, b, h, first_query + j);
        probability = expf(dot * scale - lse[row]);
        if constexpr (kLowPrecision) probability = round_to<kDType>(probability);
        value = probability * (dp - row_d[row]);
        if constexpr (kLowPrecision) value = round_to<kDType>(value);
      }
      p[i] = probability;
      ds[i] = value;
    }
    __syncthreads();
    for (int slot = 0; slot < kMaxColumnsPerThread; ++slot) {
      const int c = threadIdx.x + slot * blockDim.x;
      if (c >= d) break;
      for (int j = 0; j < queries; ++j) {
        const float q_value = q_tile[j * pitch + c];
        const float do_value = do_tile[j * pitch + c];
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          dk_accumulator[slot][r] += ds[r * kTile + j] * q_value;
          dv_accumulator[slot][r] += p[r * kTile + j] * do_value;
        }
      }
    }
  }
  for (int slot = 0; slot < kMaxColumnsPerThread; ++slot) {
    const int c = threadIdx.x + slot * blockDim.x;
    if (c >= d) break;
    for (int r = 0; r < keys; ++r) {
      dk[row_offset(shape, b, first_key + r, h) + c] =
          Element<kDType>::from_float(scale * dk_accumulator[slot][r]);
      dv[row_offset(shape, b, first_key + r, h) + c] =
          Element<kDType>::from_float(dv_accumulator[slot][r]);
    }
  }
}

void check_shape(const Problem& shape, const char* who) {
  if (shape.batch <= 0 || shape.seq_len <= 0 || shape.heads <= 0 || shape.d_head <= 0)
    throw std::invalid_argument(std::string(who) + " needs a positive shape");
  // K, V, dK and dV are indexed with Q's head count: a grouped problem would read other heads.
  if (shape.heads_kv != shape.heads)
    throw std::invalid_argument(std::string(who) +
                                " runs multi-head attention only (heads_kv = heads)");
  if (shape.d_head > kThreads * kMaxColumnsPerThread)
    throw std::invalid_argument(std::string(who) + " supports d_head <= " +
                                std::to_string(kThreads * kMaxColumnsPerThread) + ", got " +
                                std::to_string(shape.d_head));
}

template <typename Kernel>
void opt_in(Kernel* kernel, std::size_t smem) {
  if (smem > 48 * 1024)
    FS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem)));
}

dim3 grid_of(const Problem& shape) {
  return dim3((shape.seq_len + kRows - 1) / kRows, shape.heads, shape.batch);
}

// Shared memory of the kernels above, in bytes: two kRows x d row blocks, two kTile x (d + 1)
// tiles, two kRows x kTile score tiles and three kRows vectors covers each of them.
std::size_t backward_smem_bytes(int d) {
  return sizeof(float) * (2 * kRows * d + 2 * kTile * (d + 1) + 2 * kRows * kTile +
                          3 * static_cast<std::size_t>(kRows));
}

template <DType kDType>
void launch_forward_with_lse(const Problem& shape, const void* q, const void* k, const void* v,
                             void* o, float* lse, cudaStream_t stream) {
  using T = typename Element<kDType>::type;
  const std::size_t smem = backward_smem_bytes(shape.d_head);
  auto* kernel = &forward_with_lse_kernel<kDType>;
  opt_in(kernel, smem);
  kernel<<<grid_of(shape), kThreads, smem, stream>>>(
      shape, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
      static_cast<T*>(o), lse);
  FS_CUDA_CHECK(cudaGetLastError());
}

template <DType kDType, bool kLowPrecision>
void launch_backward(const Problem& shape, const void* q, const void* k, const void* v,
                     const void* o, const void* d_o, const float* lse, void* dq, void* dk, void* dv,
                     cudaStream_t stream) {
  using T = typename Element<kDType>::type;
  const std::size_t rows = static_cast<std::size_t>(shape.batch) * shape.heads * shape.seq_len;
  float* statistics = nullptr;  // L then D, [B, H, N] each
  FS_CUDA_CHECK(
      cudaMallocAsync(reinterpret_cast<void**>(&statistics), 2 * rows * sizeof(float), stream));
  float* const row_lse = statistics;
  float* const row_d = statistics + rows;
  const std::size_t smem = backward_smem_bytes(shape.d_head);
  if constexpr (kLowPrecision) {
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((rows + 255) / 256, 4096));
    given_statistics_kernel<kDType><<<blocks, 256, 0, stream>>>(
        shape, static_cast<const T*>(o), static_cast<const T*>(d_o), lse, row_lse, row_d);
  } else {
    auto* kernel = &fp32_statistics_kernel<kDType>;
    opt_in(kernel, smem);
    kernel<<<grid_of(shape), kThreads, smem, stream>>>(
        shape, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
        static_cast<const T*>(d_o), row_lse, row_d);
  }
  FS_CUDA_CHECK(cudaGetLastError());
  auto* dq_kernel_function = &dq_kernel<kDType, kLowPrecision>;
  opt_in(dq_kernel_function, smem);
  dq_kernel_function<<<grid_of(shape), kThreads, smem, stream>>>(
      shape, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
      static_cast<const T*>(d_o), row_lse, row_d, static_cast<T*>(dq));
  FS_CUDA_CHECK(cudaGetLastError());
  auto* dkdv_kernel_function = &dkdv_kernel<kDType, kLowPrecision>;
  opt_in(dkdv_kernel_function, smem);
  dkdv_kernel_function<<<grid_of(shape), kThreads, smem, stream>>>(
      shape, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
      static_cast<const T*>(d_o), row_lse, row_d, static_cast<T*>(dk), static_cast<T*>(dv));
  FS_CUDA_CHECK(cudaGetLastError());
  FS_CUDA_CHECK(cudaFreeAsync(statistics, stream));
}

std::size_t element_bytes(std::int64_t count) {
  return static_cast<std::size_t>(count) * kElementBytes;
}

}  // namespace

void gpu_reference_forward_with_lse(const Problem& shape, DType dtype, const void* q, const void* k,
                                    const void* v, void* o, float* lse, cudaStream_t stream) {
  check_shape(shape, "gpu_reference_forward_with_lse");
  // The kernels are instantiated for the 16-bit dtypes: an e4m3 buffer, half the bytes, would be
  // read as 16-bit past its end.
  if (element_bytes(dtype) != 2)
    throw std::invalid_argument("gpu_reference_forward_with_lse runs fp16 and bf16 only, not " +
                                std::string(dtype_lower_name(dtype)));
  if (dtype == DType::FP16)
    launch_forward_with_lse<DType::FP16>(shape, q, k, v, o, lse, stream);
  else
    launch_forward_with_lse<DType::BF16>(shape, q, k, v, o, lse, stream);
}

void gpu_reference_attention_backward(const Problem& shape, DType dtype,
                                      ReferencePrecision precision, const void* q, const void* k,
                                      const void* v, const void* o, const void* d_o,
                                      const float* lse, void* dq, void* dk, void* dv,
                                      cudaStream_t stream) {
  check_shape(shape, "gpu_reference_attention_backward");
  // The kernels are instantiated for the 16-bit dtypes: an e4m3 buffer, half the bytes, would be
  // read as 16-bit past its end.
  if (element_bytes(dtype) != 2)
    throw std::invalid_argument("gpu_reference_attention_backward runs fp16 and bf16 only, not " +
                                std::string(dtype_lower_name(dtype)));
  const bool low = precision == ReferencePrecision::low_precision;
  if (low && (o == nullptr || lse == nullptr))
    throw std::invalid_argument(
        "gpu_reference_attention_backward: the low-precision reference needs the forward's O and "
        "log-sum-exp");
  if (dtype == DType::FP16) {
    low ? launch_backward<DType::FP16, true>(shape, q, k, v, o, d_o, lse, dq, dk, dv, stream)
        : launch_backward<DType::FP16, false>(shape, q, k, v, o, d_o, lse, dq, dk, dv, stream);
  } else {
    low ? launch_backward<DType::BF16, true>(shape, q, k, v, o, d_o, lse, dq, dk, dv, stream)
        : launch_backward<DType::BF16, false>(shape, q, k, v, o, d_o, lse, dq, dk, dv, stream);
  }
}

double GradientVerdict::ratio() const {
  if (err_ref > 0) return err_kernel / err_ref;
  return err_kernel > 0 ? INFINITY : 0.0;
}

std::string BackwardCorrectnessVerdict::summary() const {
  char text[512];
  const auto part = [](const char* name, const GradientVerdict& g, char* out, std::size_t size) {
    std::snprintf(out, size,
                  "%s %s: max|G-G_32| = %.3g %s 2 x max|G_lp-G_32| + floor = %.3g (ratio %.2f), "
                  "mean %.3g, NaN %lld",
                  name, g.passed ? "pass" : "FAIL", g.err_kernel,
                  g.err_kernel <= g.tolerance() ? "<=" : ">", g.tolerance(), g.ratio(),
                  g.vs_fp32.mean_abs, static_cast<long long>(g.nan_count));
  };
  char q_text[160], k_text[160], v_text[160];
  part("dQ", dq, q_text, sizeof q_text);
  part("dK", dk, k_text, sizeof k_text);
  part("dV", dv, v_text, sizeof v_text);
  std::snprintf(text, sizeof text, "%s; %s; %s; %s", passed ? "pass" : "FAIL", q_text, k_text,
                v_text);
  return text;
}

BackwardReferenceOutputs::BackwardReferenceOutputs(const Problem& shape, DType dtype, const void* q,
                                                   const void* k, const void* v, const void* o,
                                                   const void* d_o, const float* lse,
                                                   cudaStream_t stream)
    : shape_(shape), dtype_(dtype) {
  const std::size_t bytes = element_bytes(shape.query_elements());
  try {
    for (int g = 0; g < 3; ++g) {
      FS_CUDA_CHECK(cudaMalloc(&low_precision_[g], bytes));
      FS_CUDA_CHECK(cudaMalloc(&fp32_[g], bytes));
    }
    gpu_reference_attention_backward(shape, dtype, ReferencePrecision::low_precision, q, k, v, o,
                                     d_o, lse, low_precision_[0], low_precision_[1],
                                     low_precision_[2], stream);
    gpu_reference_attention_backward(shape, dtype, ReferencePrecision::fp32, q, k, v, nullptr, d_o,
                                     nullptr, fp32_[0], fp32_[1], fp32_[2], stream);
    // The largest |G_32| element over the three gradients: the kernel-independent scale the
    // floor is taken from (a zero buffer as the other operand of compare_outputs).
    void* zeros = nullptr;
    FS_CUDA_CHECK(cudaMallocAsync(&zeros, bytes, stream));
    FS_CUDA_CHECK(cudaMemsetAsync(zeros, 0, bytes, stream));
    double scale = 0;
    for (int g = 0; g < 3; ++g) {
      reference_gap_[g] =
          compare_outputs(low_precision_[g], fp32_[g], dtype, shape.query_elements(), stream)
              .max_abs;
      scale = std::max(
          scale, compare_outputs(fp32_[g], zeros, dtype, shape.query_elements(), stream).max_abs);
    }
    FS_CUDA_CHECK(cudaFreeAsync(zeros, stream));
    floor_ = kRelativeFloor * scale;
  } catch (...) {
    for (int g = 0; g < 3; ++g) {
      cudaFree(low_precision_[g]);
      cudaFree(fp32_[g]);
    }
    throw;
  }
}

BackwardReferenceOutputs::~BackwardReferenceOutputs() {
  for (int g = 0; g < 3; ++g) {
    cudaFree(low_precision_[g]);
    cudaFree(fp32_[g]);
  }
}

BackwardCorrectnessVerdict BackwardReferenceOutputs::check(const void* dq, const void* dk,
                                                           const void* dv,
                                                           cudaStream_t stream) const {
  BackwardCorrectnessVerdict verdict;
  const void* gradients[3] = {dq, dk, dv};
  GradientVerdict* parts[3] = {&verdict.dq, &verdict.dk, &verdict.dv};
  verdict.passed = true;
  for (int g = 0; g < 3; ++g) {
    GradientVerdict& part = *parts[g];
    part.vs_fp32 = compare_outputs(gradients[g], fp32_[g], dtype_, shape_.query_elements(), stream);
    part.err_kernel = part.vs_fp32.max_abs;
    part.err_ref = reference_gap_[g];
    part.floor = floor_;
    part.nan_count = part.vs_fp32.nan_count;
    part.passed = part.nan_count == 0 && part.err_kernel <= part.tolerance();
    verdict.passed = verdict.passed && part.passed;
  }
  return verdict;
}

}  // namespace flashscope
