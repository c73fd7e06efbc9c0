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
int ex2_blocks_per_sm(bool half2);
int smem_blocks_per_sm();

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

// ---- MUFU (ex2) ------------------------------------------------------------------------------
// Every thread iterates kEx2Chains independent chains x <- 2^(-x), one ex2.approx per chain per
// iteration (ex2.approx.ftz.f32, or ex2.approx.f16x2 on two halves at once). The map is a
// contraction to its fixed point 2^(-x*) = x* = 0.641185744..., so after a few dozen iterations
// every chain holds x* whatever it started from: out[thread] is the largest |x - x*| of the
// thread's chains (both halves for f16x2), which shows the instructions ran. The negation is
// folded into the instruction or costs an FMA-pipe add, never a MUFU slot.
inline constexpr int kEx2Threads = 256;
inline constexpr int kEx2Chains = 8;
inline constexpr double kEx2FixedPoint = 0.6411857445049859;
// Results (ex2 values) per launch: f16x2 counts two per instruction.
double ex2_results(bool half2, int blocks, int iterations);
cudaError_t launch_ex2(bool half2, int blocks, int iterations, float* out, cudaStream_t stream);

// ---- Shared memory ---------------------------------------------------------------------------
// Every block fills kSmemSlots 16-byte slots of shared memory with smem_word(slot, lane), then
// each thread reads slots thread + j * kSmemThreads for j < kSmemUnroll once per iteration with
// ld.shared.v4.u32: a warp reads 512 contiguous bytes per instruction, the fewest wavefronts
// (conflict-free). Each thread adds up the words it read (mod 2^32) into sums[thread];
// smem_expected_sum() is that sum, so the host checks every thread.
inline constexpr int kSmemThreads = 256;
inline constexpr int kSmemUnroll = 8;
inline constexpr int kSmemSlots = kSmemThreads * kSmemUnroll;  // 32 KiB per block
__host__ __device__ constexpr std::uint32_t smem_word(std::uint32_t slot, std::uint32_t lane) {
  return (slot * 4 + lane) * 2654435761u + 12345u;
}
// The sum one thread `thread_in_block` (0..kSmemThreads-1) computes over `iterations`.
std::uint32_t smem_expected_sum(int thread_in_block, int iterations);
double smem_bytes(int blocks, int iterations);
cudaError_t launch_smem_read(int blocks, int iterations, std::uint32_t* sums, cudaStream_t stream);

}  // namespace flashscope::ceilings
