// The idle gap of the gapped launch pattern (interleaved.hpp): one thread spins on %globaltimer,
// so the stream waits while the SMs do (almost) nothing.
#include <cmath>
#include <cstdint>

#include "profiling/measurement/interleaved.hpp"

namespace flashscope::measurement {

namespace {

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

__global__ void idle_gap_kernel(std::uint64_t spin_ns) {
  const std::uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < spin_ns) {
  }
}

}  // namespace

cudaError_t enqueue_idle_gap(double microseconds, cudaStream_t stream) {
  if (!(microseconds > 0)) return cudaSuccess;
  idle_gap_kernel<<<1, 1, 0, stream>>>(
      static_cast<std::uint64_t>(std::llround(microseconds * 1e3)));
  return cudaGetLastError();
}

}  // namespace flashscope::measurement
