// The microbenchmarks behind `explorer peak` (profiling/ceilings/ceilings.hpp): host-side launchers
// of kernels that do nothing but issue one instruction family as fast as the device allows.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/common/config.hpp"

namespace flashscope::ceilings {

// How many blocks of each kernel fit on one SM at once
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor): the launches use exactly SMs x this, one full
// wave. A negative value is a cudaError_t.
int mma_sync_blocks_per_sm(DType dtype);
int wgmma_blocks_per_sm(DType dtype);
int hbm_blocks_per_sm();

// ---- Tensor cores ------------------------------------------------------------------------------
// Every accumulator starts at 0 and gains A·B with A = 1 and B = kMmaBValue in every element, so
// after the launch each thread's first accumulator holds exactly expected_accumulator(): the
// launch checks that the instructions ran, not only how fast.
inline constexpr float kMmaBValue = 1.0f / 4096;  // 2^-12: exact in fp16 and bf16

// mma.sync.m16n8k16 (steps 1–16): per warp, kMmaSyncChains independent accumulators, each
// updated once per iteration. 4096 FLOP per instruction (2·16·8·16).
inline constexpr int kMmaSyncThreads = 256;
inline constexpr int kMmaSyncChains = 8;
inline constexpr double kMmaSyncFlopsPerInstruction = 2.0 * 16 * 8 * 16;
double mma_sync_flops(int blocks, int iterations);
float mma_sync_expected_accumulator(int iterations);
cudaError_t launch_mma_sync(DType dtype, int blocks, int iterations, float* out,
                            cudaStream_t stream);

// wgmma.mma_async m64n256k16 with A and B in SMEM (the Hopper steps' instruction): per
// warpgroup, kWgmmaPerGroup instructions per commit group, one group per iteration.
// 524,288 FLOP per instruction (2·64·256·16). Needs sm_90a machine code in this binary and a
// compute capability 9.0 device; wgmma_compiled() says whether the first holds.
inline constexpr int kWgmmaWarpgroups = 2;
inline constexpr int kWgmmaThreads = 128 * kWgmmaWarpgroups;
inline constexpr int kWgmmaPerGroup = 16;
inline constexpr double kWgmmaFlopsPerInstruction = 2.0 * 64 * 256 * 16;
double wgmma_flops(int blocks, int iterations);
float wgmma_expected_accumulator(int iterations);
// Runs a one-block probe: true when the device executed the sm_90a code path.
bool wgmma_compiled(cudaStream_t stream);
// `executed` becomes 1 when the sm_90a code path ran, 0 when the device ran another.
cudaError_t launch_wgmma(DType dtype, int blocks, int iterations, float* out, int* executed,
                         cudaStream_t stream);

// ---- HBM -------------------------------------------------------------------------------------
// Streams `words` 16-byte words: read-only (each thread sums what it read into sums[thread]) or
// a copy from `source` to `destination`.
inline constexpr int kStreamThreads = 256;
cudaError_t launch_hbm_read(const uint4* data, std::size_t words, int blocks,
                            unsigned long long* sums, cudaStream_t stream);
cudaError_t launch_hbm_copy(const uint4* source, uint4* destination, std::size_t words, int blocks,
                            cudaStream_t stream);

}  // namespace flashscope::ceilings
