// Flash Attention 2 forward, step 19 (hopper-track.md §3): warp specialization and register
// reallocation. The CTA becomes one producer warpgroup and two consumer warpgroups (384 threads).
// One producer thread issues every TMA copy into a circular buffer of `stages` K/V slots: it waits
// on a slot's "empty" barrier (the consumers arrive once they are done reading it) before it
// refills the slot and arms its "full" barrier with the bytes to expect. The consumers run step
// 18's loop without any CTA-wide barrier: they wait on "full", compute, and arrive on "empty".
// Since the producer needs almost no registers, it gives them back with setmaxnreg.dec and the
// consumers take them with setmaxnreg.inc (the kernel's __launch_bounds__(384, 1) caps it at 168
// registers on entry; each role is one branch of a single if/else, or ptxas ignores the
// reallocation with warning C7508).
//
// One CTA owns B_r = 128 query rows of one (sample, head): consumer c computes S and O for rows
// [64c, 64c + 64), its warp v holding rows [64c + 16v, 64c + 16v + 16) of the accumulators.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/config.hpp"
#include "kernels/common/forward_args.hpp"
#include "kernels/common/kernel_entry.cuh"
#include "kernels/common/ptx_hopper.cuh"
#include "kernels/common/registry.hpp"
#include "kernels/common/tensor_map.hpp"
#include "kernels/versions/v19/block_gemms.cuh"
#include "kernels/versions/v19/fragments.cuh"
#include "kernels/versions/v19/gmem_smem_copy.cuh"
#include "kernels/versions/v19/layout.cuh"
#include "kernels/versions/v19/online_softmax.cuh"

namespace flashscope::v19 {

template <typename StaticC>
__global__ void __launch_bounds__(Shape<StaticC::value>::kThreads, 1)
    flash_forward_kernel(const __grid_constant__ ForwardArgs args,
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
  // The barriers: Q's, then per K and V buffer a "full" one (its bytes have landed) and an
  // "empty" one (every consumer warp is done reading it).
  const std::uint32_t barriers = ptx::smem_address(tiles) + Sh::kBarrierOffsetBytes;
  const std::uint32_t Q_full = barriers;
  const auto K_full = [barriers](int stage) { return barriers + 8 * (1 + stage); };
  const auto V_full = [barriers](int stage) { return barriers + 8 * (1 + Sh::kStages + stage); };
  const auto K_empty = [barriers](int stage) {
    return barriers + 8 * (1 + 2 * Sh::kStages + stage);
  };
  const auto V_empty = [barriers](int stage) {
    return barriers + 8 * (1 + 3 * Sh::kStages + stage);
  };

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int warpgroup = warp / kWarpgroupWarps;

  const int query_block = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.y);
  const int sample = static_cast<int>(blockIdx.z);

  if (tid == 0) {
    ptx::prefetch_tensor_map(&maps.q);
    ptx::prefetch_tensor_map(&maps.k);
    ptx::prefetch_tensor_map(&maps.v);
    ptx::mbarrier_init(Q_full, 1);
    for (int stage = 0; stage < Sh::kStages; ++stage) {
      ptx::mbarrier_init(K_full(stage), 1);
      ptx::mbarrier_init(V_full(stage), 1);
      ptx::mbarrier_init(K_empty(stage), Sh::kConsumerWarps);
      ptx::mbarrier_init(V_empty(stage), Sh::kConsumerWarps);
    }
    ptx::fence_barrier_init();
  }
  __syncthreads();  // the barriers are initialised before anyone waits on them; the last CTA
                    // barrier

  // KV blocks are processed from the last to the first (spec §4.13): iteration i handles block
  // last_kv_block - i in buffer i % stages, whose barriers complete their (i / stages)-th phase.
  const int n_kv_blocks = args.n_KV_blocks;
  const int last_kv_block = n_kv_blocks - 1;

  if (warpgroup == 0) {
    // ---- Producer ------------------------------------------------------------------------------
    ptx::setmaxnreg_dec<Sh::kProducerRegisters>();
    if (tid == 0) {
      load_tile<C, C.B_r>(Q_address, &maps.q, Q_full, {query_block * C.B_r, head, sample});
      for (int iteration = 0; iteration < n_kv_blocks; ++iteration) {
        const int stage = iteration % Sh::kStages;
        // A slot's previous occupant was iteration - stages, released in phase
        // (iteration / stages - 1) of its empty barriers.
        const std::uint32_t previous_phase = (iteration / Sh::kStages + 1) % 2;
        const TileCoordinates from{(last_kv_block - iteration) * C.B_c, head, sample};
        if (iteration >= Sh::kStages) ptx::mbarrier_wait(K_empty(stage), previous_phase);
        load_tile<C, C.B_c>(K_address + stage * Sh::kKVTileBytes, &maps.k, K_full(stage), from);
        if (iteration >= Sh::kStages) ptx::mbarrier_wait(V_empty(stage), previous_phase);
        load_tile<C, C.B_c>(V_address + stage * Sh::kKVTileBytes, &maps.v, V_full(stage), from);
      }
    }
  } else {
    // ---- Consumers -----------------------------------------------------------------------------
    ptx::setmaxnreg_inc<Sh::kConsumerRegisters>();
    const int consumer = warpgroup - 1;
    const int warp_first_query_row = (warp - kWarpgroupWarps) * Sh::kWarpQueryRows;
    // This consumer's wgmma descriptors of the three tiles (K and V of stage 0), computed once.
    const OperandDescriptors descriptors =
        make_operand_descriptors<C>(Q_address, K_address, V_address, consumer);
    // One arrival per consumer warp, once its wgmmas reading the buffer have completed.
    auto release = [lane](std::uint32_t empty_barrier) {
      if (lane == 0) ptx::mbarrier_arrive(empty_barrier);
    };

    Accumulators<Sh::kMTiles, Sh::kOutputNTiles> O;  // zeroed inside the first KV block
    OnlineSoftmax<C> softmax;
    ptx::mbarrier_wait(Q_full, 0);

    // ---- One KV block, templated on being the first --------------------------------------------
    auto process_kv_block = [&](int iteration, auto is_first_block) {
      constexpr bool kIsFirstBlock = decltype(is_first_block)::value;
      const int stage = iteration % Sh::kStages;
      const std::uint32_t phase = (iteration / Sh::kStages) % 2;
      Accumulators<Sh::kMTiles, Sh::kScoreNTiles> S;  // overwritten by the first wgmma
      ptx::mbarrier_wait(K_full(stage), phase);
      compute_scores<C>(S, descriptors, stage);
      release(K_empty(stage));

      // Zeroed only now, so the zeros are not live across Q·Kᵀ.
      if constexpr (kIsFirstBlock) zero(O);
      softmax.template update<kIsFirstBlock>(S, O);
      AFragments<Sh::kMTiles, Sh::kPVSlices> P;
      convert_to_A_fragments<C.dtype>(P, S);
      ptx::mbarrier_wait(V_full(stage), phase);
      accumulate_output<C>(O, P, descriptors, stage);
      release(V_empty(stage));
    };

    // ---- KV loop, backwards, the first block processed (the last one) peeled off -------------
    process_kv_block(0, std::true_type{});
    for (int iteration = 1; iteration < n_kv_blocks; ++iteration) {
      process_kv_block(iteration, std::false_type{});
    }

    // ---- Epilogue ----------------------------------------------------------------------------
    // O goes through this consumer's own rows of the Q tile (in the swizzled layout the O map
    // expects) and leaves by one TMA store per consumer: each writer fences its stores to the
    // async proxy, the consumer meets at its own named barrier, and one thread issues the store
    // and waits until the TMA unit has read the rows before the CTA may exit.
    softmax.normalize(O);
    store_O_fragments<C>(Q_tile, warp_first_query_row, O, lane);
    ptx::fence_proxy_async_shared();
    ptx::named_barrier_sync(1 + consumer, kWarpgroupWarps * 32);
    if (tid % (kWarpgroupWarps * 32) == 0) {
      store_rows<C, C.B_r, kWarpgroupRows>(
          &maps.o, Q_address, consumer * kWarpgroupRows,
          {query_block * C.B_r + consumer * kWarpgroupRows, head, sample});
      ptx::tma_store_wait_read<0>();
    }
  }
}

// Step 19 runs any head count (the tensor maps hold the strides); compiled for sm_90a only, it
// runs on compute capability 9.0 alone, which the entry records for launch validation. The
// launch encodes the maps: Q boxes of B_r rows, K and V boxes of B_c rows, O boxes of one
// consumer's 64 rows.
template <KernelConfig C>
void register_kernel(KernelRegistry& registry, int step) {
  constexpr TmaKernelFunction kKernel = &flash_forward_kernel<StaticConfig<C>>;
  registry.add(make_hopper_kernel_entry<C>(
      step, &launch_tma_kernel<C, kKernel, C.B_r, kWarpgroupRows>, kKernel));
}

}  // namespace flashscope::v19
