// Flash Attention 2 forward, step 18 (hopper-track.md §3): the Tensor Memory Accelerator and an
// mbarrier pipeline. Q, K and V arrive by TMA (cp.async.bulk.tensor) from tensor maps with the
// real tensor extents, each box written straight into step 17's 128-byte swizzled sub-tiles; one
// thread issues every copy. K and V go through `stages` buffers, each with an mbarrier whose phase
// completes when its bytes have landed (arrive.expect_tx + transaction counts), so the loads of
// the next stages - 1 blocks are in flight while a block is computed, and no thread waits on a
// copy it did not need yet. O leaves through SMEM and a TMA store per warpgroup. The block GEMMs
// are step 17's wgmmas; KV blocks still run backwards with the first one peeled.
//
// One CTA owns B_r query rows of one (sample, head): warpgroup g computes S and O for rows
// [64g, 64g + 64), warp w holding rows [16w, 16w + 16) of the accumulators. A buffer is refilled
// once every warpgroup is done with it: a CTA barrier at the start of each KV block (step 19
// replaces it with per-buffer "empty" barriers and a producer warpgroup).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/config.hpp"
#include "kernels/common/forward_args.hpp"
#include "kernels/common/kernel_entry.cuh"
#include "kernels/common/ptx_hopper.cuh"
#include "kernels/common/registry.hpp"
#include "kernels/common/tensor_map.hpp"
#include "kernels/versions/v18/block_gemms.cuh"
#include "kernels/versions/v18/fragments.cuh"
#include "kernels/versions/v18/gmem_smem_copy.cuh"
#include "kernels/versions/v18/layout.cuh"
#include "kernels/versions/v18/online_softmax.cuh"

namespace flashscope::v18 {

template <typename StaticC>
__global__ void flash_forward_kernel(const __grid_constant__ ForwardArgs args,
                                     const __grid_constant__ AttentionTensorMaps maps) {
  constexpr KernelConfig C = StaticC::value;
  using Sh = Shape<C>;  // also holds the config's static checks
  using Element = typename Sh::Element;

  // wgmma and TMA address the tiles with the 128-byte swizzle, whose pattern repeats every 1024
  // bytes: the tiles start on such a boundary (the launch reserves kHopperSmemAlignment bytes).
  extern __shared__ uint4 smem[];
  const std::uint32_t misalignment = ptx::smem_address(smem) % kHopperSmemAlignment;
  Element* const tiles = reinterpret_cast<Element*>(
      reinterpret_cast<char*>(smem) + (kHopperSmemAlignment - misalignment) % kHopperSmemAlignment);
  Element* const Q_tile = tiles + Sh::kQTileOffset;  // later O
  const std::uint32_t Q_address = ptx::smem_address(Q_tile);
  const std::uint32_t K_address = ptx::smem_address(tiles + Sh::kKTileOffset);  // stage 0
  const std::uint32_t V_address = ptx::smem_address(tiles + Sh::kVTileOffset);  // stage 0
  // The barriers: Q's, then one "full" barrier per K buffer and per V buffer.
  const std::uint32_t barriers = ptx::smem_address(tiles) + Sh::kBarrierOffsetBytes;
  const std::uint32_t Q_full = barriers;
  const auto K_full = [barriers](int stage) { return barriers + 8 * (1 + stage); };
  const auto V_full = [barriers](int stage) { return barriers + 8 * (1 + Sh::kStages + stage); };

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int warpgroup = warp / kWarpgroupWarps;
  const int warp_first_query_row = warp * Sh::kWarpQueryRows;
  const bool is_issuer = tid == 0;  // the one thread that issues every TMA copy

  // This warpgroup's wgmma descriptors of the three tiles (K and V of stage 0), computed once.
  const OperandDescriptors descriptors =
      make_operand_descriptors<C>(Q_address, K_address, V_address, warpgroup);

  const int query_block = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.y);
  const int sample = static_cast<int>(blockIdx.z);

  if (is_issuer) {
    ptx::prefetch_tensor_map(&maps.q);
    ptx::prefetch_tensor_map(&maps.k);
    ptx::prefetch_tensor_map(&maps.v);
    ptx::mbarrier_init(Q_full, 1);
    for (int stage = 0; stage < Sh::kStages; ++stage) {
      ptx::mbarrier_init(K_full(stage), 1);
      ptx::mbarrier_init(V_full(stage), 1);
    }
    ptx::fence_barrier_init();
  }
  __syncthreads();  // the barriers are initialised before anyone waits on them

  // KV blocks are processed from the last to the first (spec §4.13): iteration i handles block
  // last_kv_block - i in buffer i % stages, whose barrier completes its (i / stages)-th phase.
  const int n_kv_blocks = args.n_KV_blocks;
  const int last_kv_block = n_kv_blocks - 1;
  auto load_kv_block = [&](int iteration) {
    const int stage = iteration % Sh::kStages;
    const TileCoordinates from{(last_kv_block - iteration) * C.B_c, head, sample};
    load_tile<C, C.B_c>(K_address + stage * Sh::kKVTileBytes, &maps.k, K_full(stage), from);
    load_tile<C, C.B_c>(V_address + stage * Sh::kKVTileBytes, &maps.v, V_full(stage), from);
  };

  // ---- Prologue ----------------------------------------------------------------------------
  // Q stays in SMEM: wgmma reads it from there for every KV block. The first `stages` K/V blocks
  // are requested at once.
  if (is_issuer) {
    load_tile<C, C.B_r>(Q_address, &maps.q, Q_full, {query_block * C.B_r, head, sample});
    for (int iteration = 0; iteration < Sh::kStages && iteration < n_kv_blocks; ++iteration)
      load_kv_block(iteration);
  }

  Accumulators<Sh::kMTiles, Sh::kOutputNTiles> O;  // zeroed inside the first KV block
  OnlineSoftmax<C> softmax;
  ptx::mbarrier_wait(Q_full, 0);

  // ---- One KV block, templated on being the first ----------------------------------------------
  auto process_kv_block = [&](int iteration, auto is_first_block) {
    constexpr bool kIsFirstBlock = decltype(is_first_block)::value;
    const int stage = iteration % Sh::kStages;
    const std::uint32_t phase = (iteration / Sh::kStages) % 2;
    if constexpr (!kIsFirstBlock) {
      // Every warpgroup is done with the previous block's buffer: refill it with the block
      // `stages` iterations ahead.
      __syncthreads();
      if (is_issuer && iteration - 1 + Sh::kStages < n_kv_blocks)
        load_kv_block(iteration - 1 + Sh::kStages);
    }
    Accumulators<Sh::kMTiles, Sh::kScoreNTiles> S;  // overwritten by the first wgmma
    ptx::mbarrier_wait(K_full(stage), phase);
    compute_scores<C>(S, descriptors, stage);

    // Zeroed only now, so the zeros are not live across Q·Kᵀ.
    if constexpr (kIsFirstBlock) zero(O);
    softmax.template update<kIsFirstBlock>(S, O);
    AFragments<Sh::kMTiles, Sh::kPVSlices> P;
    convert_to_A_fragments<C.dtype>(P, S);
    ptx::mbarrier_wait(V_full(stage), phase);
    accumulate_output<C>(O, P, descriptors, stage);
  };

  // ---- KV loop, backwards, the first block processed (the last one) peeled off ---------------
  process_kv_block(0, std::true_type{});
  for (int iteration = 1; iteration < n_kv_blocks; ++iteration) {
    process_kv_block(iteration, std::false_type{});
  }

  // ---- Epilogue ------------------------------------------------------------------------------
  // O goes through this warpgroup's own rows of the Q tile (in the swizzled layout the O map
  // expects) and leaves by one TMA store per warpgroup: each writer fences its stores to the
  // async proxy, the warpgroup meets at its own named barrier, and one thread issues the store
  // and waits until the TMA unit has read the rows before the CTA may exit.
  softmax.normalize(O);
  store_O_fragments<C>(Q_tile, warp_first_query_row, O, lane);
  ptx::fence_proxy_async_shared();
  ptx::named_barrier_sync(1 + warpgroup, kWarpgroupWarps * 32);
  if (tid % (kWarpgroupWarps * 32) == 0) {
    store_rows<C, C.B_r, kWarpgroupRows>(
        &maps.o, Q_address, warpgroup * kWarpgroupRows,
        {query_block * C.B_r + warpgroup * kWarpgroupRows, head, sample});
    ptx::tma_store_wait_read<0>();
  }
}

// Step 18 runs any head count (the tensor maps hold the strides); compiled for sm_90a only, it
// runs on compute capability 9.0 alone, which the entry records for launch validation. The
// launch encodes the maps: Q boxes of B_r rows, K and V boxes of B_c rows, O boxes of one
// warpgroup's 64 rows.
template <KernelConfig C>
void register_kernel(KernelRegistry& registry, int step) {
  constexpr TmaKernelFunction kKernel = &flash_forward_kernel<StaticConfig<C>>;
  registry.add(make_hopper_kernel_entry<C>(
      step, &launch_tma_kernel<C, kKernel, C.B_r, kWarpgroupRows>, kKernel));
}

}  // namespace flashscope::v18
