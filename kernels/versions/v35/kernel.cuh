// Flash Attention 2 forward, step 34 (docs/versions/34.md): a partial query block runs on the
// consumers that hold a position (live_consumers.cuh). B_r = 192 divides no power-of-two seq_len,
// so at d_head 64 without the mask the last block of each (sample, head) has 64 or 128 rows of
// positions, and step 33's kernel ran its other consumers' GEMMs over rows that are never stored.
// Step 34's consumers whose rows all lie past seq_len (or past the packed rows) sit the tile out:
// the live ones take the GEMM turns round themselves, the producer releases the idle ones' ring
// slots, and the partial blocks are scheduled after every whole one, so an idle consumer leaves
// the tile loop for good and no consumer branches inside a tile (step 33's KV loops unchanged).
// The FP8 path (fp8_kernel.cuh) is step 33's. Everything else is step 33.
//
// Step 30 (docs/versions/30.md): under the causal mask the query grid
// is aligned to the end of the sequence (Packing::first_position). Step 29's grid starts at
// position 0, so when B_r = 192 (or a packed P) does not divide seq_len its partial tile is the
// last one, the heaviest under the mask, and it computes the KV blocks of rows that do not exist.
// Aligned to the end, the partial tile is the first one (one or two KV blocks at B_r = 192), every
// other tile is whole, the last ends at seq_len - 1, and step 24's paired schedule still pairs the
// heaviest with the lightest (a tile's KV block count still grows with its index). Rows before
// position 0 are zero-filled by TMA, masked against every key and not stored. Without the mask
// the grid is step 29's. Everything else is step 29.
//
// Step 29 (docs/versions/29.md): a third consumer warpgroup. Step 28's
// kernels ping-pong two consumers of 64 query rows each (B_r = 128); step 29's take their GEMM
// turns round two or three consumers, so a config of B_r = 192 (n_warps 16: the producer and
// three consumers, setmaxnreg 160) keeps three softmaxes under the tensor cores' work, which
// d_head = 64 needs (docs/versions/25.md: no pipe is full there). A tile of 192 rows still starts
// at a multiple of B_r and meets KV blocks of B_c keys: step 26's packed blocks already end past
// seq_len (their rows are zero-filled by TMA and never stored), so the last tile of a length that
// 192 does not divide is such a block. Everything else is step 28.
//
// Step 28 (docs/versions/28.md), the first FP8 step: e4m3 configs run
// the FP8 path of fp8_kernel.cuh (both GEMMs in e4m3, V transposed in shared memory by the
// producer); fp16 and bf16 configs run the kernel below, step 27's, unchanged. Step 27
// (docs/versions/27.md): conditional rescaling of O. Step 26
// (grouped-query attention by packing, docs/versions/26.md) rescales every row of O and its sum l
// by exp(m_old - m_new) after every KV block, even when the row maximum did not change. Step 27
// moves a row's reference maximum only when the block's maximum exceeds it by more than 8 in the
// exp2 domain, a factor 2^8 (FlashAttention-4's conditional rescaling); until then exp2 keeps the
// stale maximum, P stays at most 256, and O and l keep their reference. The warp votes
// (online_softmax.cuh): when none of its rows moves its maximum, it skips the exp2 of the factors
// and the multiplies of its O registers after P·V of the previous block completes. O / l and the
// log-sum-exp stay exact, since O and l share the reference. Everything else is step 26.
//
// One tile is B_r = 64 x consumers rows: consumer c computes S and O for rows [64c, 64c + 64),
// its warp v holding rows [64c + 16v, 64c + 16v + 16) of the accumulators.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/config.hpp"
#include "kernels/common/forward_args.hpp"
#include "kernels/common/kernel_entry.cuh"
#include "kernels/common/mbarrier_pipeline.cuh"
#include "kernels/common/ptx_hopper.cuh"
#include "kernels/common/registry.hpp"
#include "kernels/common/tensor_map.hpp"
#include "kernels/common/tile_scheduler.hpp"
#include "kernels/versions/v35/block_gemms.cuh"
#include "kernels/versions/v35/causal_mask.cuh"
#include "kernels/versions/v35/fp8_kernel.cuh"
#include "kernels/versions/v35/fragments.cuh"
#include "kernels/versions/v35/gmem_smem_copy.cuh"
#include "kernels/versions/v35/layout.cuh"
#include "kernels/versions/v35/live_consumers.cuh"
#include "kernels/versions/v35/online_softmax.cuh"
#include "kernels/versions/v35/packing.cuh"
#include "kernels/versions/v35/step.hpp"

namespace flashscope::v35 {

template <typename StaticC>
__global__ void __launch_bounds__(Shape<StaticC::value>::kThreads, 1)
    flash_forward_kernel(const __grid_constant__ ForwardArgs args,
                         const __grid_constant__ AttentionTensorMaps maps) {
  constexpr KernelConfig C = StaticC::value;
  using Sh = Shape<C>;  // also holds the config's static checks
  using Element = typename Sh::Element;
  using KVState = pipeline::PipelineState<Sh::kStages>;
  using QState = pipeline::PipelineState<1>;

  // wgmma and TMA address the tiles with the 128-byte swizzle, whose pattern repeats every 1024
  // bytes: the tiles start on such a boundary (the launch reserves kHopperSmemAlignment bytes).
  extern __shared__ uint4 smem[];
  const std::uint32_t misalignment = ptx::smem_address(smem) % kHopperSmemAlignment;
  Element* const tiles = reinterpret_cast<Element*>(
      reinterpret_cast<char*>(smem) + (kHopperSmemAlignment - misalignment) % kHopperSmemAlignment);
  const std::uint32_t Q_address = ptx::smem_address(tiles + Sh::kQTileOffset);
  const std::uint32_t K_address = ptx::smem_address(tiles + Sh::kKTileOffset);  // stage 0
  const std::uint32_t V_address = ptx::smem_address(tiles + Sh::kVTileOffset);  // stage 0
  // Q is a ring of one slot: full once its bytes have landed, empty once every consumer warp has
  // completed the tile's last Q·Kᵀ. K and V are rings of `stages` slots, released separately
  // (K after Q·Kᵀ, V after P·V).
  const std::uint32_t barriers = ptx::smem_address(tiles);
  const pipeline::MbarrierPipeline<1> Q_ring(barriers + Sh::kBarrierOffsetBytes);
  const pipeline::MbarrierPipeline<Sh::kStages> K_ring(barriers + Sh::kKRingOffsetBytes);
  const pipeline::MbarrierPipeline<Sh::kStages> V_ring(barriers + Sh::kVRingOffsetBytes);

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int warpgroup = warp / kWarpgroupWarps;

  // g, P and P·g: the same for every tile. The launcher has set n_Q_blocks to the packed blocks
  // per (sample, K/V head).
  const Packing packing = Packing::of<C>(args);

  // Every role walks the same tiles in the same order. With the mask, CTA b takes the work units
  // b, b + grid, ... of equal cost, each a heavy and a light packed block of one (sample, K/V
  // head), heavy first; without it, tiles b, b + grid, ... as in step 22, step 34: in an order
  // that puts each head's partial last block after every whole one (live_consumers.cuh).
  const bool causal = args.causal != 0;
  const scheduling::TileSpace space{args.n_Q_blocks, args.n_kv_heads, args.batch};
  scheduling::PairedTileScheduler scheduler(space, causal, static_cast<int>(blockIdx.x),
                                            static_cast<int>(gridDim.x));
  const bool partial_last = !causal && args.n_Q_blocks * packing.positions > args.seq_len;

  if (tid == 0) {
    ptx::prefetch_tensor_map(&maps.q);
    ptx::prefetch_tensor_map(&maps.k);
    ptx::prefetch_tensor_map(&maps.v);
    Q_ring.init(Sh::kConsumerWarps);
    K_ring.init(Sh::kConsumerWarps);
    V_ring.init(Sh::kConsumerWarps);
    ptx::fence_barrier_init();
  }
  // Rows P·g .. B_r - 1 of the Q tile are idle when g does not divide B_r: no box writes them, and
  // left as they are they would feed the GEMMs whatever the SMEM held. Zeroed once here, they
  // stay zero (every box writes rows 0 .. P·g - 1 of its sub-tile only), so their scores are 0 and
  // their softmax finite; their O rows are never stored. The zeros are ordinary stores that wgmma
  // reads through the async proxy: each thread fences them before the CTA barrier.
  if (packing.rows < C.B_r) {
    constexpr int kChunksPerRow = kSubTileRowBytes / 16;
    const int idle_chunks = (C.B_r - packing.rows) * kChunksPerRow;
    for (int chunk = tid; chunk < Sh::kDHead / kSubTileColumns * idle_chunks;
         chunk += Sh::kThreads) {
      const int sub_tile = chunk / idle_chunks;
      const int row = packing.rows + chunk % idle_chunks / kChunksPerRow;
      uint4* const sub_tile_rows =
          reinterpret_cast<uint4*>(tiles + Sh::kQTileOffset + sub_tile * C.B_r * kSubTileColumns);
      sub_tile_rows[row * kChunksPerRow + chunk % kChunksPerRow] = make_uint4(0, 0, 0, 0);
    }
    ptx::fence_proxy_async_shared();
  }
  __syncthreads();  // the barriers are initialised before anyone waits on them, the idle Q rows
                    // zeroed before any wgmma reads them; the last CTA barrier

  // KV blocks are processed from the last one a tile needs to the first (spec §4.13). The K/V
  // rings run on across tiles: a tile's first block takes the slot after the previous tile's last
  // one.

  if (warpgroup == 0) {
    // ---- Producer ------------------------------------------------------------------------------
    ptx::setmaxnreg_dec<Sh::kProducerRegisters>();
    if (tid == 0) {
      QState q_state;
      KVState kv_state;
      const std::uint32_t Q_bytes = packed_tile_bytes<C>(packing.rows);
      for (; scheduler.has_tile(); scheduler.advance()) {
        const scheduling::AttentionTile tile =
            partial_blocks_last(scheduler.tile(), space, partial_last);  // tile.head: K/V head
        const int first_position = packing.first_position(tile.query_block, args.seq_len, causal);
        const CausalBlockRange range =
            kv_blocks_of<C>(first_position, packing.positions, args.n_KV_blocks, causal);
        const int last_kv_block = range.blocks - 1;
        // Step 34: the releases of the consumer warps that sit this tile out, made by the producer
        // as soon as it has the slot: the slot's empty barrier is then in the phase of this very
        // fill (its previous phase has completed), so they count towards it and no other.
        const std::uint32_t idle_warps =
            (Sh::kConsumerWarpgroups -
             live_consumers<C>(packing, first_position, args.seq_len, causal)) *
            kWarpgroupWarps;
        // The previous tile's consumers still run their last P·V and epilogue while this lands.
        // One box per sub-tile: P positions of the group's g query heads, head fastest.
        Q_ring.producer_acquire(q_state);
        load_tile<C, C.B_r>(Q_address, &maps.q, Q_ring.producer_expect_bytes(q_state, Q_bytes),
                            {first_position, tile.head * packing.group, tile.sample});
        if (idle_warps > 0) mbarrier_arrive_count(Q_ring.empty_barrier(q_state.index), idle_warps);
        q_state.advance();
        for (int block = 0; block < range.blocks; ++block, kv_state.advance()) {
          const TileCoordinates from{(last_kv_block - block) * C.B_c, tile.head, tile.sample};
          const int slot_offset = kv_state.index * Sh::kKVTileBytes;
          K_ring.producer_acquire(kv_state);
          load_tile<C, C.B_c>(K_address + slot_offset, &maps.k,
                              K_ring.producer_expect_bytes(kv_state, kTileBytes<C, C.B_c>), from);
          V_ring.producer_acquire(kv_state);
          load_tile<C, C.B_c>(V_address + slot_offset, &maps.v,
                              V_ring.producer_expect_bytes(kv_state, kTileBytes<C, C.B_c>), from);
          if (idle_warps > 0) {
            mbarrier_arrive_count(K_ring.empty_barrier(kv_state.index), idle_warps);
            mbarrier_arrive_count(V_ring.empty_barrier(kv_state.index), idle_warps);
          }
        }
      }
    }
  } else {
    // ---- Consumers -----------------------------------------------------------------------------
    ptx::setmaxnreg_inc<Sh::kConsumerRegisters>();
    const int consumer = warpgroup - 1;
    const int warp_first_query_row = (warp - kWarpgroupWarps) * Sh::kWarpQueryRows;
    // The (position, head) offsets of this thread's rows g and g + 8, for every tile.
    const PackedRows rows(packing, warp_first_query_row + lane / 4);
    // This consumer's wgmma descriptors of the three tiles (K and V of stage 0), computed once:
    // every tile uses the same buffers.
    const OperandDescriptors descriptors =
        make_operand_descriptors<C>(Q_address, K_address, V_address, consumer);
    // One arrival per consumer warp, once its wgmmas reading the buffer have completed.
    auto release = [lane](const auto& ring, const auto& state) {
      if (lane == 0) ring.consumer_release(state);
    };
    // The turn to issue GEMMs goes round the consumers in order 0, 1, .., kConsumers - 1, 0, ..:
    // consumer c waits at named barrier kTurnBarrier + c, which completes when the consumer before
    // it (c - 1 mod kConsumers) arrives there (it has issued its GEMMs). Two warpgroups meet at
    // each barrier, whatever the consumer count, and a consumer cannot arrive at the next one's
    // barrier twice before that one waited: its next turn waits for the whole round. Consumer 0
    // takes the very first turn without waiting; every turn ends with a hand-over, across tile
    // boundaries too, and consumer 0 takes the last consumer's last hand-over after its last
    // tile, so every arrival is matched by one wait. Step 29: three consumers at B_r = 192 (step
    // 28's ping-pong is the round of two). Step 34: the round of a tile is its live consumers
    // 0 .. live - 1 (live_consumers.cuh), so the last live one hands the turn to consumer 0, live
    // in every tile; a consumer arrives at consumer 0's barrier in its last turn of a tile only
    // when it is that tile's last live one, so each arrival is still matched by one wait. A tile
    // with one live consumer is a round of one: consumer 0 arrives at its own barrier (128 of its
    // 256 threads) and its next turn's wait brings the other 128, so its turns pass at once.
    constexpr int kTurnBarrier = 3;  // 0: __syncthreads, 1-2: step 24's epilogues (unused), 3-5
    constexpr int kTurnThreads = 2 * kWarpgroupWarps * 32;
    const bool goes_first = consumer == 0;
    int next_in_round = 0;  // the consumer this one hands its turns to in the current tile
    auto begin_turn = [consumer] {
      ptx::named_barrier_sync(kTurnBarrier + consumer, kTurnThreads);
    };
    auto end_turn = [&next_in_round] {
      ptx::named_barrier_arrive(kTurnBarrier + next_in_round, kTurnThreads);
    };

    QState q_state;
    KVState kv_state;
    bool first_turn = true;
    for (; scheduler.has_tile(); scheduler.advance()) {
      const scheduling::AttentionTile tile =
          partial_blocks_last(scheduler.tile(), space, partial_last);  // tile.head: K/V head
      const int first_position = packing.first_position(tile.query_block, args.seq_len, causal);
      // Step 34: a consumer without a stored row here has none in any later tile of this CTA
      // (live_consumers.cuh): it is done, and the producer releases its slots from here on.
      const int live = live_consumers<C>(packing, first_position, args.seq_len, causal);
      if (consumer >= live) break;
      next_in_round = consumer + 1 < live ? consumer + 1 : 0;
      const CausalBlockRange range =
          kv_blocks_of<C>(first_position, packing.positions, args.n_KV_blocks, causal);
      // The query positions of the thread's rows g and g + 8.
      const int row_positions[2] = {first_position + rows.position_offset[0],
                                    first_position + rows.position_offset[1]};
      Accumulators<Sh::kMTiles, Sh::kOutputNTiles> O;  // zeroed before the first P·V
      Accumulators<Sh::kMTiles, Sh::kScoreNTiles> S;   // overwritten by each block's first wgmma
      AFragments<Sh::kMTiles, Sh::kPVSlices> P;
      OnlineSoftmax<C> softmax;
      typename OnlineSoftmax<C>::RescaleFactors factors;
      Q_ring.consumer_wait(q_state);

      // ---- Prologue: Q·Kᵀ of the first block (the last one) and its softmax --------------------
      if (!(goes_first && first_turn)) begin_turn();
      first_turn = false;
      K_ring.consumer_wait(kv_state);
      issue_scores<C>(S, descriptors, kv_state.index);
      end_turn();
      wait_for_gemms<0>(S[0]);
      release(K_ring, kv_state);
      zero(O);
      if (range.masked_blocks > 0) apply_causal_mask<C>(S, row_positions, range.blocks - 1, lane);
      softmax.template update_scores<true>(S, factors);
      convert_to_A_fragments<C.dtype>(P, S);
      KVState previous = kv_state;
      kv_state.advance();

      // ---- KV loop, backwards: a turn issues Q·Kᵀ of block j and P·V of block j - 1 ------------
      // The turns of blocks that cross the diagonal (the ones after the prologue's, when the
      // tile's positions q0 .. q0 + P - 1 reach into more than one block) mask S; they run in a
      // loop of their own, so the loop over every other block is step 22's straight-line body,
      // with no branch between the score GEMM and the softmax.
      auto kv_turn = [&](int block, auto masked) {
        begin_turn();
        K_ring.consumer_wait(kv_state);
        issue_scores<C>(S, descriptors, kv_state.index);
        V_ring.consumer_wait(previous);
        issue_output<C>(O, P, descriptors, previous.index);
        end_turn();
        wait_for_gemms<1>(S[0]);  // S_j is complete; P_{j-1}·V_{j-1} may still run
        release(K_ring, kv_state);
        if constexpr (decltype(masked)::value)
          apply_causal_mask<C>(S, row_positions, range.blocks - 1 - block, lane);
        // Overlaps P_{j-1}·V_{j-1}. Step 27: false when no row of this warp moved its maximum,
        // and then O keeps its reference and the multiplies below are skipped (warp-uniform).
        const bool rescales = softmax.template update_scores<false>(S, factors);
        wait_for_gemms<0>(O[0]);
        // P_{j-1} was the in-flight GEMM's A operand: it is overwritten only from here on.
        for (auto& slice : P[0])
          for (std::uint32_t& pair : slice)
            ptx::fence_operand(pair);
        release(V_ring, previous);
        if (rescales) softmax.rescale(O, factors);
        convert_to_A_fragments<C.dtype>(P, S);
        previous = kv_state;
        kv_state.advance();
      };
      int block = 1;
      for (; block < range.masked_blocks; ++block)
        kv_turn(block, std::true_type{});
      for (; block < range.blocks; ++block)
        kv_turn(block, std::false_type{});
      // Every Q·Kᵀ of this tile has completed: the producer may load the next tile's Q now,
      // under this tile's last P·V and epilogue.
      release(Q_ring, q_state);
      q_state.advance();

      // ---- P·V of the last block ---------------------------------------------------------------
      begin_turn();
      V_ring.consumer_wait(previous);
      issue_output<C>(O, P, descriptors, previous.index);
      end_turn();
      wait_for_gemms<0>(O[0]);
      release(V_ring, previous);

      // ---- Epilogue, overlapped with the other consumers' GEMMs --------------------------------
      // O goes from the registers to its rows of GMEM, each row to its (position, head); idle
      // rows and positions past seq_len (step 30: or before 0) are not stored. Nothing waits for
      // the stores.
      softmax.normalize(O);
      Element* row_addresses[2];
      bool stored[2];
      int heads[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        stored[half] =
            rows.used[half] && row_positions[half] >= 0 && row_positions[half] < args.seq_len;
        heads[half] = tile.head * packing.group + rows.head_offset[half];
        row_addresses[half] =
            stored[half]
                ? static_cast<Element*>(args.O) + tile.sample * args.batch_stride +
                      row_positions[half] * args.seq_stride + heads[half] * args.head_stride
                : nullptr;
      }
      store_O_to_global<C>(row_addresses, O, lane);
      // The row log-sum-exp, [batch, n_heads, seq_len]: lane t = 0 of the quad writes row g, lane
      // t = 1 row g + 8 (the four lanes hold the same value).
      // (Selects, not an index by t: the row arrays stay in registers.)
      if (args.softmax_lse != nullptr) {
        const int t = lane % 4;
        const bool second = t == 1;
        const float lse = second ? softmax.log_sum_exp(0, 1) : softmax.log_sum_exp(0, 0);
        const int head = second ? heads[1] : heads[0];
        const int position = second ? row_positions[1] : row_positions[0];
        if (t < 2 && (second ? stored[1] : stored[0]))
          args.softmax_lse[(static_cast<std::int64_t>(tile.sample) * args.n_heads + head) *
                               args.seq_len +
                           position] = lse;
      }
    }
    if (goes_first) begin_turn();  // the last consumer's last hand-over
  }
}

// The persistent launch: one CTA per SM (the register file holds one CTA at these
// register counts), never more CTAs than tiles, over the tile space (packed blocks, K/V heads,
// batch). The tensor maps are encoded per launch: Q in boxes of g heads x P positions (the spec's
// box[1] widened to the group), K and V over their own layout (n_kv_heads heads) in boxes of B_c
// rows of one head. O leaves from the registers, so its map is not encoded (left zero; the kernel
// never reads it). The launch's n_Q_blocks (ceil(seq_len / B_r) for steps 1–25) is replaced by
// the packed block count ceil(seq_len / P). A group of more than B_r query heads (P = 0) or a
// head count that is not a multiple of n_kv_heads is refused with cudaErrorInvalidValue.
template <KernelConfig C>
cudaError_t launch_persistent(const ForwardArgs& args, cudaStream_t stream) {
  constexpr TmaKernelFunction kKernel = &flash_forward_kernel<StaticConfig<C>>;
  constexpr int kSmemBytes = Shape<C>::kSmemBytes;
  static const cudaError_t opt_in =
      cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  if (opt_in != cudaSuccess) return opt_in;
  if (args.n_kv_heads < 1 || args.n_heads % args.n_kv_heads != 0 ||
      args.n_heads / args.n_kv_heads > C.B_r)
    return cudaErrorInvalidValue;
  const Packing packing = Packing::of<C>(args);
  ForwardArgs packed_args = args;
  packed_args.n_Q_blocks = packing.blocks(args.seq_len);

  TensorMapSpec q = attention_tensor_map_spec(C.dtype, C.d_head, query_layout(args),
                                              /*box_rows=*/packing.positions);
  q.box[1] = static_cast<cuuint32_t>(packing.group);
  const TensorMapSpec kv =
      attention_tensor_map_spec(C.dtype, C.d_head, key_value_layout(args), C.B_c);
  AttentionTensorMaps maps{};
  maps.q = encode_tensor_map(q, args.Q);
  maps.k = encode_tensor_map(kv, args.K);
  maps.v = encode_tensor_map(kv, args.V);

  const scheduling::TileSpace space{packed_args.n_Q_blocks, args.n_kv_heads, args.batch};
  const int units = scheduling::PairedTileScheduler::unit_count(space, args.causal != 0);
  const int ctas = scheduling::persistent_grid_size(units, scheduling::current_device_sm_count(),
                                                    /*ctas_per_sm=*/1);
  kKernel<<<ctas, threads_per_block(C), kSmemBytes, stream>>>(packed_args, maps);
  return cudaGetLastError();
}

// Step 26 runs any head count and any K/V head count that divides it with groups of at most B_r
// heads (the tensor maps hold the strides); compiled for sm_90a only, it runs on compute
// capability 9.0 alone, which the entry records for launch validation. It applies the causal mask
// on request, as its descriptor declares. Step 28: an e4m3 config registers the FP8 path
// (fp8_kernel.cuh); fp16 and bf16 configs register step 27's kernel above, unchanged.
template <KernelConfig C>
void register_kernel(KernelRegistry& registry, int step) {
  if constexpr (C.dtype == DType::E4M3) {
    constexpr TmaKernelFunction kKernel = &flash_forward_fp8_kernel<StaticConfig<C>>;
    KernelEntry entry = make_hopper_kernel_entry<C>(step, &launch_persistent_fp8<C>, kKernel);
    entry.smem_bytes = Fp8Shape<C>::kSmemBytes;
    entry.supports_causal = versions::kStep35.causal;
    registry.add(std::move(entry));
  } else {
    constexpr TmaKernelFunction kKernel = &flash_forward_kernel<StaticConfig<C>>;
    KernelEntry entry = make_hopper_kernel_entry<C>(step, &launch_persistent<C>, kKernel);
    entry.smem_bytes = Shape<C>::kSmemBytes;
    entry.supports_causal = versions::kStep35.causal;
    registry.add(std::move(entry));
  }
}

}  // namespace flashscope::v35
