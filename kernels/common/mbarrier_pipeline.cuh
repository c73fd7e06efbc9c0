// The mbarrier pipeline of the Hopper steps (hopper-track.md §3, steps 18–21 each wrote it out by
// hand): a circular buffer of kStages SMEM slots, each guarded by a "full" barrier (the producer's
// bytes have landed) and an "empty" barrier (every consumer is done reading the slot). Used from
// step 22 on; steps 17–21 stay as they were written.
//
// The arithmetic it owns: which slot an iteration uses and which phase parity to wait for. An
// mbarrier starts in phase 0, and `mbarrier.try_wait.parity P` returns once the phase of parity P
// has completed; for a fresh barrier the phase "before" phase 0 counts as completed, so waiting
// for parity 1 returns at once. That is why the producer waits on the empty barriers with the
// opposite parity of the consumers' full-barrier waits: its first pass over the ring finds every
// slot free without a special case, and every later pass waits for the consumers' release of the
// slot's previous occupant.
#pragma once

#include <cstdint>

#include "kernels/common/ptx_hopper.cuh"

namespace flashscope::pipeline {

// A position in the ring: the slot an iteration uses and the parity of the phase its barriers
// complete for it. Iteration i of a run that started at a fresh state is slot i % kStages, parity
// (i / kStages) % 2; advance() walks that sequence without a division.
template <int kStages>
struct PipelineState {
  static_assert(kStages >= 1, "a pipeline has at least one slot");
  int index = 0;
  std::uint32_t phase = 0;

  __device__ __forceinline__ void advance() {
    if (++index == kStages) {
      index = 0;
      phase ^= 1u;
    }
  }
  // The state `count` iterations later (count >= 0).
  __device__ __forceinline__ PipelineState advanced(int count) const {
    PipelineState next = *this;
    for (int i = 0; i < count; ++i)
      next.advance();
    return next;
  }
};

// The barriers of one ring: kStages full barriers followed by kStages empty barriers, 8 bytes
// each, at `barriers` (a shared-space byte address, 8-byte aligned).
template <int kStages>
class MbarrierPipeline {
 public:
  static constexpr int kBarrierBytes = 2 * kStages * 8;

  __device__ __forceinline__ explicit MbarrierPipeline(std::uint32_t barriers)
      : barriers_(barriers) {}

  // One thread, before any other thread uses the ring (then fence_barrier_init and a CTA barrier):
  // a full barrier completes with the producer's one arrival plus its announced bytes, an empty
  // barrier with `consumer_arrivals` releases.
  __device__ __forceinline__ void init(std::uint32_t consumer_arrivals) const {
    for (int stage = 0; stage < kStages; ++stage) {
      ptx::mbarrier_init(full_barrier(stage), 1);
      ptx::mbarrier_init(empty_barrier(stage), consumer_arrivals);
    }
  }

  __device__ __forceinline__ std::uint32_t full_barrier(int stage) const {
    return barriers_ + 8 * stage;
  }
  __device__ __forceinline__ std::uint32_t empty_barrier(int stage) const {
    return barriers_ + 8 * (kStages + stage);
  }

  // ---- Producer ---------------------------------------------------------------------------------
  // Waits until the slot of `state` is free (its previous occupant released by every consumer).
  __device__ __forceinline__ void producer_acquire(const PipelineState<kStages>& state) const {
    ptx::mbarrier_wait(empty_barrier(state.index), state.phase ^ 1u);
  }
  // Announces `bytes` arriving by TMA into the slot; returns the full barrier the copies complete.
  __device__ __forceinline__ std::uint32_t producer_expect_bytes(
      const PipelineState<kStages>& state, std::uint32_t bytes) const {
    ptx::mbarrier_arrive_expect_tx(full_barrier(state.index), bytes);
    return full_barrier(state.index);
  }
  // Marks the slot full after ordinary (generic-proxy) stores instead of TMA copies: the arrival
  // has release semantics, the consumers' wait acquire semantics.
  __device__ __forceinline__ void producer_commit(const PipelineState<kStages>& state) const {
    ptx::mbarrier_arrive(full_barrier(state.index));
  }

  // ---- Consumers --------------------------------------------------------------------------------
  // Waits until the slot of `state` holds its data.
  __device__ __forceinline__ void consumer_wait(const PipelineState<kStages>& state) const {
    ptx::mbarrier_wait(full_barrier(state.index), state.phase);
  }
  // One of the `consumer_arrivals` releases of the slot of `state`.
  __device__ __forceinline__ void consumer_release(const PipelineState<kStages>& state) const {
    ptx::mbarrier_arrive(empty_barrier(state.index));
  }

 private:
  std::uint32_t barriers_;
};

}  // namespace flashscope::pipeline
