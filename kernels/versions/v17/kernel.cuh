// Flash Attention 2 forward, step 17 (hopper-track.md §3): warpgroup MMA. Both block GEMMs run on
// Hopper's wgmma, issued by a warpgroup of four warps for 64 query rows at a time: S = Q·Kᵀ reads
// Q and K straight from SMEM through descriptors, O += P·V takes P from registers (S's
// accumulators rounded to 16 bits are already wgmma's register-A layout) and V from SMEM read
// MN-major. ldmatrix, the register staging of K and V and the per-lane fragment addresses of
// steps 4–16 are gone; the SMEM tiles keep step 15–16's 64-column swizzled sub-tiles, which on a
// 1024-byte aligned base are exactly wgmma's 128-byte swizzled layout. Everything else is step 16:
// cp.async block copies with the static GMEM stride, the eager schedule, KV blocks backwards, the
// peeled first block, the exp2 softmax and the coalesced O store through SMEM.
//
// One CTA owns B_r query rows of one (sample, head): warpgroup g computes S and O for rows
// [64g, 64g + 64), warp w holding rows [16w, 16w + 16) of the accumulators; all copies are shared
// by the CTA.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/config.hpp"
#include "kernels/common/forward_args.hpp"
#include "kernels/common/kernel_entry.cuh"
#include "kernels/common/ptx_hopper.cuh"
#include "kernels/common/registry.hpp"
#include "kernels/versions/v17/block_gemms.cuh"
#include "kernels/versions/v17/fragments.cuh"
#include "kernels/versions/v17/gmem_smem_copy.cuh"
#include "kernels/versions/v17/layout.cuh"
#include "kernels/versions/v17/online_softmax.cuh"

namespace flashscope::v17 {

template <typename StaticC, int kHeads>
__global__ void flash_forward_kernel(const __grid_constant__ ForwardArgs args) {
  constexpr KernelConfig C = StaticC::value;
  static_assert(kHeads > 0, "the static head count must be positive");
  // Elements between sequence positions inside a block, fixed at compile time (spec §4.16).
  constexpr int kGmemRowStride = C.d_head * kHeads;
  using Sh = Shape<C>;  // also holds the config's static checks
  using Element = typename Sh::Element;

  // wgmma reads the tiles with the 128-byte swizzle, whose pattern repeats every 1024 bytes: the
  // tiles start on such a boundary (the launch reserves kHopperSmemAlignment bytes for this).
  extern __shared__ uint4 smem[];
  const std::uint32_t misalignment = ptx::smem_address(smem) % kHopperSmemAlignment;
  Element* const tiles = reinterpret_cast<Element*>(
      reinterpret_cast<char*>(smem) + (kHopperSmemAlignment - misalignment) % kHopperSmemAlignment);
  Element* const Q_tile = tiles + Sh::kQTileOffset;  // later O
  Element* const K_tile = tiles + Sh::kKTileOffset;
  Element* const V_tile = tiles + Sh::kVTileOffset;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int warp_first_query_row = warp * Sh::kWarpQueryRows;

  // This warpgroup's wgmma descriptors of the three tiles, computed once.
  const OperandDescriptors descriptors =
      make_operand_descriptors<C>(ptx::smem_address(Q_tile), ptx::smem_address(K_tile),
                                  ptx::smem_address(V_tile), warp / kWarpgroupWarps);

  // The start of this CTA's (sample, head) sequence in each tensor, from the run-time strides;
  // blocks are addressed by their number from there, with the static row stride.
  const CopyLane<C, kGmemRowStride> copy_lane(tid);
  const std::int64_t head_offset = blockIdx.z * args.batch_stride + blockIdx.y * args.head_stride;
  const Element* const Q_sequence = static_cast<const Element*>(args.Q) + head_offset;
  Element* const O_sequence = static_cast<Element*>(args.O) + head_offset;
  const Element* const K_sequence = static_cast<const Element*>(args.K) + head_offset;
  const Element* const V_sequence = static_cast<const Element*>(args.V) + head_offset;
  const int query_block = static_cast<int>(blockIdx.x);

  auto copy_K_block = [&](int kv_block) {
    copy_block_to_smem<C, C.B_c>(K_tile, K_sequence, kv_block, copy_lane);
    commit_copies();
  };
  auto copy_V_block = [&](int kv_block) {
    copy_block_to_smem<C, C.B_c>(V_tile, V_sequence, kv_block, copy_lane);
    commit_copies();
  };
  // cp.async writes through the generic proxy and wgmma reads through the async proxy: each
  // thread fences its landed copies before the barrier that publishes them.
  auto publish_copies_to_tensor_cores = [] {
    wait_for_copies<0>();
    ptx::fence_proxy_async_shared();
    __syncthreads();
  };

  // KV blocks are processed from the last to the first (spec §4.13).
  const int last_kv_block = args.n_KV_blocks - 1;

  // ---- Prologue ----------------------------------------------------------------------------
  // Q stays in SMEM: wgmma reads it from there for every KV block.
  copy_block_to_smem<C, C.B_r>(Q_tile, Q_sequence, query_block, copy_lane);
  commit_copies();
  copy_K_block(last_kv_block);

  Accumulators<Sh::kMTiles, Sh::kOutputNTiles> O;  // zeroed inside the first KV block
  OnlineSoftmax<C> softmax;

  // ---- One KV block of the eager schedule (spec §4.3), templated on being the first ----------
  auto process_kv_block = [&](int kv_block, auto is_first_block) {
    constexpr bool kIsFirstBlock = decltype(is_first_block)::value;
    Accumulators<Sh::kMTiles, Sh::kScoreNTiles> S;  // overwritten by the first wgmma
    publish_copies_to_tensor_cores();               // K(j), and Q on the first pass; V tile free
    copy_V_block(kv_block);                         // overlaps Q·Kᵀ
    compute_scores<C>(S, descriptors);
    publish_copies_to_tensor_cores();  // V(j); every warpgroup is done with K(j): K tile free
    if (kv_block > 0) copy_K_block(kv_block - 1);  // overlaps softmax and P·V

    // Zeroed only now, so the zeros are not live across Q·Kᵀ.
    if constexpr (kIsFirstBlock) zero(O);
    softmax.template update<kIsFirstBlock>(S, O);
    AFragments<Sh::kMTiles, Sh::kPVSlices> P;
    convert_to_A_fragments<C.dtype>(P, S);
    accumulate_output<C>(O, P, descriptors);
  };

  // ---- KV loop, backwards, the first block processed (the last one) peeled off ---------------
  process_kv_block(last_kv_block, std::true_type{});
  for (int kv_block = last_kv_block - 1; kv_block >= 0; --kv_block) {
    process_kv_block(kv_block, std::false_type{});
  }

  // ---- Epilogue ------------------------------------------------------------------------------
  // O goes through this warp's own rows of the Q tile so the GMEM stores are 16-byte coalesced.
  // The copy out is CTA-cooperative, so every warp's rows must be written first.
  softmax.normalize(O);
  store_O_fragments<C>(Q_tile, warp_first_query_row, O, lane);
  __syncthreads();
  copy_block_to_gmem<C, C.B_r>(O_sequence, query_block, Q_tile, copy_lane);
}

// Step 17 keeps step 16's static head count (configs/: static_head_counts) and, compiled for
// sm_90a only, runs on compute capability 9.0 alone: the entry carries both, so launch validation
// rejects another head count or GPU with a message.
template <KernelConfig C, int... kStaticHeads>
void register_kernel(KernelRegistry& registry, int step) {
  static_assert(sizeof...(kStaticHeads) == 1,
                "step 17 instantiates exactly one static head count per config");
  constexpr int kHeads = (kStaticHeads + ...);
  constexpr KernelFunction kKernel = &flash_forward_kernel<StaticConfig<C>, kHeads>;
  registry.add(
      make_hopper_kernel_entry<C>(step, &launch_kernel<C, kKernel>, kKernel, {kStaticHeads...}));
}

}  // namespace flashscope::v17
