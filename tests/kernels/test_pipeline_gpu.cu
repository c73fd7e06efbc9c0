// The shared mbarrier pipeline (kernels/common/mbarrier_pipeline.cuh) driven on the GPU by a tiny
// kernel: one producer thread fills a ring of kStages SMEM slots through the bulk-copy engine
// (transaction bytes on the full barriers, as the TMA steps do) and several consumer warps read
// every slot, so the ring wraps around many times. Every event takes a ticket from one global
// counter, and the host checks the order the barriers must impose:
//  * a consumer reads iteration i only after its bytes have landed, and reads exactly iteration
//    i's payload (a wrong parity would let it read a stale slot);
//  * the producer refills the slot of iteration i only after every consumer released the slot's
//    previous occupant, iteration i - kStages (consumers sleep before releasing, so a producer
//    that did not wait would overwrite a slot still being read, which the consumers detect).
// Also a host check of PipelineState's walk against the closed form (i % kStages, i / kStages %
// 2).
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/mbarrier_pipeline.cuh"
#include "tests/support/gpu_presence.hpp"

using namespace flashscope;

namespace {

constexpr int kConsumerWarps = 3;
constexpr int kPayloadWords = 8;  // 32 bytes per slot: two 16-byte bulk-copy granules
constexpr int kPayloadBytes = kPayloadWords * 4;

// Per iteration and role, the ticket of each event; 0 = never happened.
struct EventLog {
  unsigned* filled;     // [iteration]: producer acquired the slot (before issuing the copy)
  unsigned* read;       // [iteration * kConsumerWarps + c]: consumer c saw the data
  unsigned* released;   // [iteration * kConsumerWarps + c]: consumer c released the slot
  int* payload_errors;  // payload words that did not hold their iteration's value
};

__device__ unsigned take_ticket(unsigned* counter) {
  return atomicAdd(counter, 1u) + 1u;
}

// payloads[i][w] = i * 1000 + w, in global memory; the ring copies them in one at a time.
template <int kStages>
__global__ void drive_ring(const std::uint32_t* payloads, int iterations, unsigned* counter,
                           EventLog log) {
  __shared__ alignas(128) std::uint32_t slots[kStages][kPayloadWords];
  __shared__ alignas(8) std::uint64_t barrier_storage[2 * kStages];
  const pipeline::MbarrierPipeline<kStages> ring(ptx::smem_address(barrier_storage));
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (threadIdx.x == 0) {
    ring.init(kConsumerWarps);
    ptx::fence_barrier_init();
  }
  __syncthreads();

  pipeline::PipelineState<kStages> state;
  if (warp == 0) {
    if (lane == 0) {
      for (int i = 0; i < iterations; ++i, state.advance()) {
        ring.producer_acquire(state);
        log.filled[i] = take_ticket(counter);
        __threadfence();
        ptx::bulk_copy_global_to_shared(ptx::smem_address(&slots[state.index][0]),
                                        payloads + i * kPayloadWords, kPayloadBytes,
                                        ring.producer_expect_bytes(state, kPayloadBytes));
      }
    }
    return;
  }
  const int consumer = warp - 1;
  for (int i = 0; i < iterations; ++i, state.advance()) {
    ring.consumer_wait(state);
    if (lane == 0) log.read[i * kConsumerWarps + consumer] = take_ticket(counter);
    // Read, linger (uneven per consumer, so slots are released out of step), read again: a
    // producer that refilled early would change the second read.
    int errors = 0;
    if (lane < kPayloadWords) {
      const std::uint32_t expected = static_cast<std::uint32_t>(i * 1000 + lane);
      errors += slots[state.index][lane] != expected;
      __nanosleep(200 + 300 * consumer + 50 * (i % 7));
      errors += slots[state.index][lane] != expected;
    }
    __syncwarp();
    if (errors != 0) atomicAdd(log.payload_errors, errors);
    if (lane == 0) {
      log.released[i * kConsumerWarps + consumer] = take_ticket(counter);
      __threadfence();
      ring.consumer_release(state);
    }
  }
}

template <int kStages>
void check_ring(int iterations) {
  CAPTURE(kStages);
  CAPTURE(iterations);
  std::vector<std::uint32_t> payloads(static_cast<std::size_t>(iterations) * kPayloadWords);
  for (int i = 0; i < iterations; ++i)
    for (int w = 0; w < kPayloadWords; ++w)
      payloads[static_cast<std::size_t>(i) * kPayloadWords + w] =
          static_cast<std::uint32_t>(i * 1000 + w);

  const std::size_t per_consumer = static_cast<std::size_t>(iterations) * kConsumerWarps;
  std::uint32_t* device_payloads = nullptr;
  unsigned* device_counter = nullptr;
  unsigned* device_events = nullptr;
  int* device_errors = nullptr;
  const std::size_t event_count = iterations + 2 * per_consumer;
  FS_CUDA_CHECK(cudaMalloc(&device_payloads, payloads.size() * sizeof(std::uint32_t)));
  FS_CUDA_CHECK(cudaMalloc(&device_counter, sizeof(unsigned)));
  FS_CUDA_CHECK(cudaMalloc(&device_events, event_count * sizeof(unsigned)));
  FS_CUDA_CHECK(cudaMalloc(&device_errors, sizeof(int)));
  FS_CUDA_CHECK(cudaMemcpy(device_payloads, payloads.data(),
                           payloads.size() * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  FS_CUDA_CHECK(cudaMemset(device_counter, 0, sizeof(unsigned)));
  FS_CUDA_CHECK(cudaMemset(device_events, 0, event_count * sizeof(unsigned)));
  FS_CUDA_CHECK(cudaMemset(device_errors, 0, sizeof(int)));
  const EventLog log{device_events, device_events + iterations,
                     device_events + iterations + per_consumer, device_errors};
  drive_ring<kStages>
      <<<1, 32 * (1 + kConsumerWarps)>>>(device_payloads, iterations, device_counter, log);
  FS_CUDA_CHECK(cudaGetLastError());
  FS_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<unsigned> events(event_count);
  int payload_errors = 0;
  FS_CUDA_CHECK(cudaMemcpy(events.data(), device_events, event_count * sizeof(unsigned),
                           cudaMemcpyDeviceToHost));
  FS_CUDA_CHECK(cudaMemcpy(&payload_errors, device_errors, sizeof(int), cudaMemcpyDeviceToHost));
  FS_CUDA_CHECK(cudaFree(device_payloads));
  FS_CUDA_CHECK(cudaFree(device_counter));
  FS_CUDA_CHECK(cudaFree(device_events));
  FS_CUDA_CHECK(cudaFree(device_errors));

  const unsigned* filled = events.data();
  const unsigned* read = filled + iterations;
  const unsigned* released = read + per_consumer;
  CHECK(payload_errors == 0);
  int order_errors = 0;
  for (int i = 0; i < iterations; ++i) {
    if (filled[i] == 0) ++order_errors;
    for (int c = 0; c < kConsumerWarps; ++c) {
      const std::size_t at = static_cast<std::size_t>(i) * kConsumerWarps + c;
      // Data first, then the read, then the release.
      if (read[at] == 0 || released[at] == 0 || !(filled[i] < read[at]) ||
          !(read[at] < released[at]))
        ++order_errors;
      // The slot is refilled only after every consumer released its previous occupant.
      if (i >= kStages) {
        const std::size_t previous = static_cast<std::size_t>(i - kStages) * kConsumerWarps + c;
        if (!(released[previous] < filled[i])) ++order_errors;
      }
      // A consumer reads the iterations in order.
      if (i > 0 && !(read[at - kConsumerWarps] < read[at])) ++order_errors;
    }
  }
  CHECK(order_errors == 0);
}

int compute_capability() {
  int device = 0, major = 0, minor = 0;
  FS_CUDA_CHECK(cudaGetDevice(&device));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

}  // namespace

TEST_CASE("the mbarrier pipeline orders fills, reads and releases through many wrap-arounds") {
  const int cc = compute_capability();
  if (cc != 90) {
    testing::skip_test_case(
        "the pipeline test is built for sm_90a (bulk copies with transaction "
        "bytes); this device is sm_" +
        std::to_string(cc));
    return;
  }
  check_ring<1>(17);
  check_ring<2>(41);
  check_ring<3>(64);
  check_ring<4>(99);
}
