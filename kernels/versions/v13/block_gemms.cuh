// The two per-KV-block GEMMs of a warp, S = Q·Kᵀ and O += P·V, with the SMEM -> RF load
// granularity and double buffering of spec §2.1, §4.4, §4.5 and §4.8.
#pragma once

#include "kernels/common/config.hpp"
#include "kernels/versions/v13/fragments.cuh"
#include "kernels/versions/v13/layout.cuh"

namespace flashscope::v13 {

// Walks a GEMM's reduction dimension in kChunks chunks. `load_chunk(chunk, stage)` moves the
// piecewise operands' fragments of a chunk into register stage `stage`; `mma_chunk(chunk,
// stage)` issues the chunk's mmas from that stage. Double buffered, the load of chunk c + 1 is
// issued before the mmas of chunk c, so its ldmatrix latency hides behind them (two stages).
// Fully unrolled, every chunk and stage index is a compile-time constant: no register indexing.
template <int kChunks, bool kDoubleBuffered, typename LoadChunk, typename MmaChunk>
__device__ __forceinline__ void for_each_chunk(LoadChunk&& load_chunk, MmaChunk&& mma_chunk) {
  if constexpr (kDoubleBuffered) {
    load_chunk(0, 0);
#pragma unroll
    for (int chunk = 0; chunk < kChunks; ++chunk) {
      if (chunk + 1 < kChunks) load_chunk(chunk + 1, (chunk + 1) % 2);
      mma_chunk(chunk, chunk % 2);
    }
  } else {
#pragma unroll
    for (int chunk = 0; chunk < kChunks; ++chunk) {
      load_chunk(chunk, 0);
      mma_chunk(chunk, 0);
    }
  }
}

// A load value of 0 means "the whole reduction dimension at once". From step 8 on, the register
// tile of a piecewise operand is one 16-wide k-slice, whatever the nonzero value (spec §2.1).
__host__ __device__ constexpr int slices_per_load(int load_fragments, int reduction_slices) {
  return load_fragments == 0 ? reduction_slices : 1;
}

// S = Q·Kᵀ for this warp's query rows against the whole K block in SMEM. A resident Q (load
// value 0) comes from `Q_resident`, loaded once before the KV loop; otherwise Q is re-read
// from SMEM slice by slice alongside K. A resident K is one chunk: the whole block is loaded
// before the first mma.
template <KernelConfig C>
__device__ __forceinline__ void compute_scores(
    Accumulators<Shape<C>::kMTiles, Shape<C>::kScoreNTiles>& S,
    const AFragments<Shape<C>::kMTiles, Shape<C>::kQKSlices>& Q_resident,
    const LdmatrixLane<C>& Q_address, const LdmatrixLane<C>& K_address) {
  using Sh = Shape<C>;
  constexpr bool kQResident = C.Q_mma_load_K_fragments == 0;
  constexpr int kSlicesPerChunk = slices_per_load(C.K_mma_load_K_fragments, Sh::kQKSlices);
  constexpr int kChunks = Sh::kQKSlices / kSlicesPerChunk;
  constexpr bool kDoubleBuffered = C.mma_double_buffer_loads && kChunks > 1;
  constexpr int kStages = kDoubleBuffered ? 2 : 1;
  static_assert(
      kQResident || slices_per_load(C.Q_mma_load_K_fragments, Sh::kQKSlices) == kSlicesPerChunk,
      "a piecewise Q must share K's chunk size");

  // Only the stages of piecewise operands are used; an unused Q stage is never written.
  AFragments<Sh::kMTiles, kSlicesPerChunk> Q_stages[kStages];
  BFragments<Sh::kScoreNTiles, kSlicesPerChunk> K_stages[kStages];

  for_each_chunk<kChunks, kDoubleBuffered>(
      [&](int chunk, int stage) {
        if constexpr (!kQResident) {
          load_Q_fragments<C, kSlicesPerChunk>(Q_stages[stage], Q_address, chunk * kSlicesPerChunk);
        }
        load_K_fragments<C, kSlicesPerChunk>(K_stages[stage], K_address, chunk * kSlicesPerChunk);
      },
      [&](int chunk, int stage) {
#pragma unroll
        for (int slice = 0; slice < kSlicesPerChunk; ++slice) {
          if constexpr (kQResident) {
            mma_slice<C.dtype>(S, Q_resident, chunk * kSlicesPerChunk + slice, K_stages[stage],
                               slice);
          } else {
            mma_slice<C.dtype>(S, Q_stages[stage], slice, K_stages[stage], slice);
          }
        }
      });
}

// O += P·V for this warp's rows against the whole V block in SMEM. P is always in registers;
// V is loaded whole (load value 0) or slice by slice along the keys.
template <KernelConfig C>
__device__ __forceinline__ void accumulate_output(
    Accumulators<Shape<C>::kMTiles, Shape<C>::kOutputNTiles>& O,
    const AFragments<Shape<C>::kMTiles, Shape<C>::kPVSlices>& P, const LdmatrixLane<C>& V_address) {
  using Sh = Shape<C>;
  constexpr int kSlicesPerChunk = slices_per_load(C.V_mma_load_K_fragments, Sh::kPVSlices);
  constexpr int kChunks = Sh::kPVSlices / kSlicesPerChunk;
  constexpr bool kDoubleBuffered = C.mma_double_buffer_loads && kChunks > 1;
  constexpr int kStages = kDoubleBuffered ? 2 : 1;

  BFragments<Sh::kOutputNTiles, kSlicesPerChunk> V_stages[kStages];

  for_each_chunk<kChunks, kDoubleBuffered>(
      [&](int chunk, int stage) {
        load_V_fragments<C, kSlicesPerChunk>(V_stages[stage], V_address, chunk * kSlicesPerChunk);
      },
      [&](int chunk, int stage) {
#pragma unroll
        for (int slice = 0; slice < kSlicesPerChunk; ++slice) {
          mma_slice<C.dtype>(O, P, chunk * kSlicesPerChunk + slice, V_stages[stage], slice);
        }
      });
}

}  // namespace flashscope::v13
