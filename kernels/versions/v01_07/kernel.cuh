// Flash Attention 2 forward, steps 1-7 (spec §3, §4.1-4.7): one source tree whose config flags
// select the copy instruction, the block-load schedule, the SMEM swizzle, the SMEM -> RF load
// granularity, double buffering of those loads and the softmax form.
//
// One CTA owns B_r query rows of one (sample, head) and streams over every K/V block of B_c
// rows. Warp w owns query rows [w·R, (w+1)·R), R = B_r / n_warps: it copies them to SMEM itself,
// computes S and O for them against the whole K/V block and writes them back. K and V are copied
// cooperatively, each warp moving B_c / n_warps rows, so they need CTA barriers.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/common/forward_args.hpp"
#include "kernels/common/kernel_entry.cuh"
#include "kernels/common/registry.hpp"
#include "kernels/versions/v01_07/block_gemms.cuh"
#include "kernels/versions/v01_07/fragments.cuh"
#include "kernels/versions/v01_07/gmem_smem_copy.cuh"
#include "kernels/versions/v01_07/layout.cuh"
#include "kernels/versions/v01_07/online_softmax.cuh"

namespace flashscope::v01_07 {

template <typename StaticC>
__global__ void flash_forward_kernel(const __grid_constant__ ForwardArgs args) {
  constexpr KernelConfig C = StaticC::value;
  using Sh = Shape<C>;  // also holds the config's static checks
  using Element = typename Sh::Element;
  constexpr bool kQResident = C.Q_mma_load_K_fragments == 0;

  extern __shared__ uint4 smem[];  // uint4: the 16-byte alignment every chunk access needs
  Element* const Q_tile = reinterpret_cast<Element*>(smem) + Sh::kQTileOffset;  // later O
  Element* const K_tile = reinterpret_cast<Element*>(smem) + Sh::kKTileOffset;
  Element* const V_tile = reinterpret_cast<Element*>(smem) + Sh::kVTileOffset;

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp_first_query_row = warp * Sh::kWarpQueryRows;
  const int warp_first_kv_row = warp * Sh::kWarpKVRows;

  // GMEM rows this warp copies: its query rows, and its share of every K/V block's rows.
  const std::int64_t head_offset = blockIdx.z * args.batch_stride + blockIdx.y * args.head_stride;
  const std::int64_t row_stride = args.seq_stride;
  const std::int64_t query_row = std::int64_t{blockIdx.x} * C.B_r + warp_first_query_row;
  const Element* const Q_rows =
      static_cast<const Element*>(args.Q) + head_offset + query_row * row_stride;
  Element* const O_rows = static_cast<Element*>(args.O) + head_offset + query_row * row_stride;
  const Element* const K_rows =
      static_cast<const Element*>(args.K) + head_offset + warp_first_kv_row * row_stride;
  const Element* const V_rows =
      static_cast<const Element*>(args.V) + head_offset + warp_first_kv_row * row_stride;
  const std::int64_t kv_block_stride = std::int64_t{C.B_c} * row_stride;

  auto copy_K_block = [&](int kv_block) {
    copy_rows_to_smem<C, Sh::kWarpKVRows>(K_tile, warp_first_kv_row,
                                          K_rows + kv_block * kv_block_stride, row_stride, lane);
    commit_copies<C>();
  };
  auto copy_V_block = [&](int kv_block) {
    copy_rows_to_smem<C, Sh::kWarpKVRows>(V_tile, warp_first_kv_row,
                                          V_rows + kv_block * kv_block_stride, row_stride, lane);
    commit_copies<C>();
  };

  // ---- Prologue ----------------------------------------------------------------------------
  // Q and K(0) are separate commit groups so a resident Q can be loaded into registers before
  // K(0) lands. Only this warp reads its Q rows, so a warp barrier makes them visible.
  copy_rows_to_smem<C, Sh::kWarpQueryRows>(Q_tile, warp_first_query_row, Q_rows, row_stride, lane);
  commit_copies<C>();
  if constexpr (C.eager_load_blocks) copy_K_block(0);

  // Only read when Q is resident (load value 0); otherwise Q is re-read from SMEM per KV block.
  AFragments<Sh::kMTiles, Sh::kQKSlices> Q_resident;
  if constexpr (kQResident || !C.eager_load_blocks) {
    constexpr int kGroupsAfterQ = C.eager_load_blocks ? 1 : 0;  // K(0) may stay in flight
    wait_for_copies<C, kGroupsAfterQ>();
    __syncwarp();
  }
  if constexpr (kQResident) {
    load_Q_fragments<C, Sh::kQKSlices>(Q_resident, Q_tile, warp_first_query_row, 0, lane);
  }

  Accumulators<Sh::kMTiles, Sh::kOutputNTiles> O;
  zero(O);
  OnlineSoftmax<C> softmax;

  // ---- KV loop -------------------------------------------------------------------------------
  for (int kv_block = 0; kv_block < args.n_KV_blocks; ++kv_block) {
    Accumulators<Sh::kMTiles, Sh::kScoreNTiles> S;

    if constexpr (C.eager_load_blocks) {
      // Spec §4.3: the V copy overlaps Q·Kᵀ, the next K copy overlaps softmax and P·V.
      zero(S);
      wait_for_copies<C, 0>();  // K(j), and Q on the first pass
      __syncthreads();          // K(j) visible; every warp is done with V(j-1): V tile free
      copy_V_block(kv_block);
      compute_scores<C>(S, Q_resident, Q_tile, warp_first_query_row, K_tile, lane);
      wait_for_copies<C, 0>();  // V(j)
      __syncthreads();          // V(j) visible; every warp is done with K(j): K tile free
      if (kv_block + 1 < args.n_KV_blocks) copy_K_block(kv_block + 1);
    } else {
      // Spec §4.1: each block copy is waited for before any math; copies never overlap mmas.
      copy_K_block(kv_block);  // K tile free: every warp passed the K barrier of block j-1
      zero(S);
      wait_for_copies<C, 0>();
      __syncthreads();  // K(j) visible; every warp is done with V(j-1): V tile free
      compute_scores<C>(S, Q_resident, Q_tile, warp_first_query_row, K_tile, lane);
      wait_for_copies<C, 0>();
      __syncthreads();  // every warp is done with K(j): K tile free for K(j+1)
    }

    softmax.update(S, O);
    AFragments<Sh::kMTiles, Sh::kPVSlices> P;
    convert_to_A_fragments<C.dtype>(P, S);

    if constexpr (!C.eager_load_blocks) {
      copy_V_block(kv_block);
      wait_for_copies<C, 0>();
      __syncthreads();  // V(j) visible
    }
    accumulate_output<C>(O, P, V_tile, lane);
  }

  // ---- Epilogue ------------------------------------------------------------------------------
  // O goes through this warp's own rows of the Q tile so the GMEM stores are 16-byte coalesced.
  softmax.normalize(O);
  store_O_fragments<C>(Q_tile, warp_first_query_row, O, lane);
  __syncwarp();
  copy_rows_to_gmem<C, Sh::kWarpQueryRows>(O_rows, row_stride, Q_tile, warp_first_query_row, lane);
}

template <KernelConfig C>
void register_kernel(KernelRegistry& registry, int step) {
  registry.add(make_kernel_entry<C, &flash_forward_kernel<StaticConfig<C>>>(step));
}

}  // namespace flashscope::v01_07
