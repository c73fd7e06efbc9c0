// The SM clock probe of timing.hpp: cycles of one SM (clock64) over wall time (%globaltimer, ns).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/common/cuda_check.hpp"
#include "profiling/timing.hpp"

namespace flashscope {

namespace {

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// Starts and stops on a tick of %globaltimer, whose update interval may be as coarse as 1 µs:
// the interval is then exact to the cost of one read (20 µs at ~1.8 GHz are 36k cycles).
__global__ void sm_clock_probe_kernel(std::uint64_t spin_ns, std::uint64_t* cycles_and_ns) {
  const std::uint64_t previous = global_timer_ns();
  std::uint64_t t0 = previous;
  while (t0 == previous)
    t0 = global_timer_ns();
  const long long c0 = clock64();
  std::uint64_t t1 = t0;
  while (t1 - t0 < spin_ns)
    t1 = global_timer_ns();
  const long long c1 = clock64();
  cycles_and_ns[0] = static_cast<std::uint64_t>(c1 - c0);
  cycles_and_ns[1] = t1 - t0;
}

}  // namespace

SmClockProbe::SmClockProbe(int samples) : samples_(samples) {
  FS_CUDA_CHECK(cudaMalloc(&device_samples_, 2 * sizeof(std::uint64_t) *
                                                 static_cast<std::size_t>(std::max(samples, 1))));
}

SmClockProbe::~SmClockProbe() {
  cudaFree(device_samples_);
}

void SmClockProbe::record(int index, std::uint64_t spin_ns, cudaStream_t stream) {
  if (index < 0 || index >= samples_) throw std::out_of_range("SmClockProbe::record: bad index");
  sm_clock_probe_kernel<<<1, 1, 0, stream>>>(spin_ns, device_samples_ + 2 * index);
  FS_CUDA_CHECK(cudaGetLastError());
}

int SmClockProbe::median_mhz(int recorded, cudaStream_t stream) const {
  if (recorded <= 0) return 0;
  std::vector<std::uint64_t> host(2 * static_cast<std::size_t>(recorded));
  FS_CUDA_CHECK(cudaMemcpyAsync(host.data(), device_samples_, host.size() * sizeof(std::uint64_t),
                                cudaMemcpyDeviceToHost, stream));
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> mhz;
  for (int i = 0; i < recorded; ++i)
    if (host[2 * i + 1] > 0)
      mhz.push_back(static_cast<double>(host[2 * i]) * 1000.0 /
                    static_cast<double>(host[2 * i + 1]));
  if (mhz.empty()) return 0;
  std::sort(mhz.begin(), mhz.end());
  return static_cast<int>(mhz[mhz.size() / 2] + 0.5);
}

}  // namespace flashscope
