// Thin wrappers over the Hopper (sm_90 / sm_90a) instructions of the Hopper track
// (hopper-track.md §1): wgmma ordering, mbarriers, the Tensor Memory Accelerator (TMA), async-proxy
// fences, named barriers and register reallocation. The wgmma instructions themselves are in the
// generated wgmma_ops.cuh. Each wrapper is one instruction (or one wait loop); the steps decide how
// to combine them. Shared-memory operands are shared-space byte addresses (ptx::smem_address).
#pragma once

#include <cuda.h>  // CUtensorMap (a type only: flashscope never links libcuda)

#include <cstdint>

#include "kernels/common/ptx.cuh"
#include "kernels/common/wgmma_descriptor.hpp"
#include "kernels/common/wgmma_ops.cuh"

namespace flashscope::ptx {

// ---- wgmma ordering ---------------------------------------------------------------------------

// Orders this warpgroup's earlier register and SMEM accesses before the wgmmas that follow: needed
// before the first wgmma that reads registers (accumulators or an A fragment) written by ordinary
// instructions.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

// Closes the wgmmas issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most kPending committed groups of this warpgroup are still in flight.
template <int kPending>
__device__ __forceinline__ void wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Tells the compiler that `value` may be read and written here, so it neither moves accesses to an
// accumulator across a wgmma issue or wait nor keeps a copy of it in another register.
__device__ __forceinline__ void fence_operand(float& value) {
  asm volatile("" : "+f"(value)::"memory");
}
__device__ __forceinline__ void fence_operand(std::uint32_t& value) {
  asm volatile("" : "+r"(value)::"memory");
}

template <int kRows, int kColumns>
__device__ __forceinline__ void fence_operands(float (&values)[kRows][kColumns]) {
#pragma unroll
  for (int row = 0; row < kRows; ++row) {
#pragma unroll
    for (int column = 0; column < kColumns; ++column)
      fence_operand(values[row][column]);
  }
}

// ---- Async proxy --------------------------------------------------------------------------------

// Makes this thread's ordinary (generic-proxy) shared-memory writes visible to the async proxy
// (wgmma operands, TMA stores); a barrier after it publishes them to the thread that issues.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---- mbarrier ---------------------------------------------------------------------------------

__device__ __forceinline__ void mbarrier_init(std::uint32_t barrier, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(arrivals)
               : "memory");
}

// Makes initialised barriers visible to the async proxy (TMA completes transactions on them).
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also announces `bytes` of transactions (TMA copies) the phase must wait for.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint32_t barrier,
                                                          std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(barrier), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(std::uint32_t barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(barrier) : "memory");
}

// Waits until the phase with parity `phase_parity` has completed. try_wait suspends the thread for
// a hardware-chosen time before it returns false, so the loop does not spin hot.
__device__ __forceinline__ void mbarrier_wait(std::uint32_t barrier, std::uint32_t phase_parity) {
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred complete;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n"
        "}\n"
        : "=r"(done)
        : "r"(barrier), "r"(phase_parity)
        : "memory");
  } while (done == 0);
}

// ---- Tensor Memory Accelerator ------------------------------------------------------------------

// Prefetches a tensor map's descriptor into the cache the TMA unit reads it from.
__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

// Copies the box at (c0, c1, c2, c3) of a 4-D tensor map into SMEM at `destination`; the bytes
// complete a transaction on `barrier` (announced by mbarrier_arrive_expect_tx).
__device__ __forceinline__ void tma_load_4d(std::uint32_t destination, const CUtensorMap* map,
                                            std::uint32_t barrier, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(destination),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(barrier), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// Copies `bytes` (a multiple of 16) of contiguous global memory at `source` into SMEM at
// `destination` (both 16-byte aligned) through the bulk-copy engine; the bytes complete a
// transaction on `barrier`, like a tensor copy's.
__device__ __forceinline__ void bulk_copy_global_to_shared(std::uint32_t destination,
                                                           const void* source, std::uint32_t bytes,
                                                           std::uint32_t barrier) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(destination),
      "l"(reinterpret_cast<std::uint64_t>(source)), "r"(bytes), "r"(barrier)
      : "memory");
}

// Copies SMEM at `source` to the box at (c0, c1, c2, c3) of a 4-D tensor map, in the bulk group
// of the issuing thread (tma_store_commit, tma_store_wait_read).
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, std::uint32_t source, int c0,
                                             int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group"
      " [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)),
      "r"(source), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// Adds `bytes` (a multiple of 16) of fp32 values in SMEM at `source` element-wise to global memory
// at `destination` (both 16-byte aligned) through the bulk-copy engine: one instruction for what
// would take bytes / 8 vector `red`s (UBLKRED in SASS). Each element's add is atomic, as a
// `red`'s is; the operation joins the issuing thread's bulk group (tma_store_commit,
// tma_store_wait_read), and its source may be rewritten once the group's reads are done.
__device__ __forceinline__ void bulk_reduce_add_f32(float* destination, std::uint32_t source,
                                                    std::uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(
                   reinterpret_cast<std::uint64_t>(destination)),
               "r"(source), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void tma_store_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// Waits until at most kPending bulk groups of this thread still read their SMEM source.
template <int kPending>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
}

// ---- Named barriers
// -------------------------------------------------------------------------------

// bar.sync on barrier `id` (1–15; 0 is __syncthreads) for `threads` threads, a multiple of 32.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Arrives at barrier `id` without waiting (the producer side of a hand-over).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// ---- Register reallocation (sm_90a)
// ---------------------------------------------------------------

// The calling warpgroup gives registers back down to kRegisters per thread.
template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(kRegisters % 8 == 0 && kRegisters >= 24 && kRegisters <= 256);
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

// The calling warpgroup takes registers up to kRegisters per thread (waits until they are free).
template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(kRegisters % 8 == 0 && kRegisters >= 24 && kRegisters <= 256);
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

}  // namespace flashscope::ptx
