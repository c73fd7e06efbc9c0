// FlashAttention-2 backward, step B6 (backward-track.md §4): step B5's kernel with the two consumer
// warpgroups out of lockstep. The FlashAttention-2 paper's Algorithm 2 in three kernels:
//  1. the preprocess: D = rowsum(dO ∘ O) and L · log2(e) per query row (fp32), and the fp32 dQ
//     accumulator zeroed;
//  2. the main kernel: per work unit (KV block, head, sample) a CTA holds K_j and V_j in shared
//     memory and dK_j, dV_j in registers while it walks the query blocks; for each it recomputes
//     P = exp(S - L), forms dP = dO·Vᵀ and dS = P ∘ (dP - D), accumulates dV += Pᵀ·dO and
//     dK += dSᵀ·Q, and adds its share of dQ = dS·K to the accumulator;
//  3. the postprocess: dQ · scale converted to the input dtype.
// What B6 changes in the main kernel (B5 has none of it; docs/versions/B6.md):
//  - no barrier of both consumers in a query block's loop. B5 met both consumer warpgroups once a
//    block, between the dSᵀ stores and dQ. B6 meets each consumer's own warpgroup there (its own
//    dSᵀ rows; at d_head 64 the whole of its dQ), and at d_head 128, where a consumer's dQ
//    columns sum over both consumers' keys, hands the other consumer's dSᵀ rows over one way
//    (the writer arrives, the reader waits) just before the dQ steps that read them: dQ is
//    issued over the consumer's own keys first, then over the other's. A consumer that is ahead
//    waits only for the rows it reads, and only once its own work of the block is issued.
// What B5 changed (B4 has none of it):
//  - a persistent grid: one CTA an SM loops over the work units, the heaviest first (the lowest KV
//    blocks under the causal mask), each CTA taking the next unit from a global counter when it
//    runs out of work (KvUnitOrder, layout.cuh; the producer hands the unit to the consumers);
//    K and V are loaded per unit once the last unit's dK and dV have left their tiles;
//  - the deterministic option (KernelConfig::deterministic): every query block's dQ receives its
//    contributions in one fixed order, through a semaphore per query block in the workspace.
// What B4 changed before (B3 has none of it):
//  - warp specialization: warpgroup 0 is a producer, one of whose threads issues every copy and
//    waits on the empty barriers; the two consumer warpgroups compute and never issue a load. The
//    producer gives registers back with setmaxnreg.dec, the consumers take them with
//    setmaxnreg.inc (regs_N); the CTA barriers of the loop are named barriers of the consumers;
//  - dQ on the copy engine: each consumer stages its 64 x 64 fp32 dQ block in shared memory and
//    one of its threads adds it to the accumulator with one bulk reduce-add
//    (cp.reduce.async.bulk .add.f32: UBLKRED) instead of 16 vector `red`s a thread. The
//    accumulator is laid out so the block is one contiguous range (dq_accumulator_offset).
// What B3 changed (B2 has none of it; sm_90a only):
//  - the five GEMMs are wgmma (block_gemms.cuh): two warpgroups of 64 keys each, Sᵀ = K·Qᵀ and
//    dPᵀ = V·dOᵀ with both operands read from SMEM through descriptors, dV += Pᵀ·dO and
//    dK += dSᵀ·Q with P and dS straight from the registers Sᵀ and dPᵀ were accumulated in (no
//    shared-memory round trip for any part of them), dQ = dS·K with dSᵀ and K read transposed
//    by the descriptors' transpose bits; no ldmatrix, no fragment addressing;
//  - the tiles arrive by TMA (gmem_smem_copy.cuh): K and V once, Q, dO, L·log2(e) and D of each
//    query block through a ring of `stages` buffers guarded by mbarriers
//    (kernels/common/mbarrier_pipeline.cuh), issued by one thread `stages - 1` blocks ahead; the
//    zero fill of rows past the end is the map's;
//  - the only shared-memory tile the warps write in the loop is dSᵀ (for dQ), double-buffered, so
//    a query block takes one CTA barrier (B2: two);
//  - dK and dV leave by TMA stores, which drop the rows past the end.
#pragma once

#include <cstdint>
#include <utility>

#include "kernels/common/backward_args.hpp"
#include "kernels/common/config.hpp"
#include "kernels/common/kernel_entry.cuh"
#include "kernels/common/mbarrier_pipeline.cuh"
#include "kernels/common/ptx.cuh"
#include "kernels/common/ptx_hopper.cuh"
#include "kernels/common/registry.hpp"
#include "kernels/common/tensor_map.hpp"
#include "kernels/common/tile_scheduler.hpp"
#include "kernels/versions/b06/block_gemms.cuh"
#include "kernels/versions/b06/fragments.cuh"
#include "kernels/versions/b06/gmem_smem_copy.cuh"
#include "kernels/versions/b06/layout.cuh"
#include "kernels/versions/b06/step.hpp"

namespace flashscope::b06 {

__device__ __forceinline__ float to_float(__half x) {
  return __half2float(x);
}
__device__ __forceinline__ float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

inline constexpr float kLog2e = 1.4426950408889634f;

// ---- 1. Preprocess -----------------------------------------------------------------------------

// The row kernels (pre- and postprocess) give each row d_head / 8 threads, 16 bytes each.
inline constexpr int kRowKernelThreads = 256;

template <KernelConfig C>
struct RowKernelShape {
  static constexpr int kThreadsPerRow = C.d_head / 8;
  static constexpr int kRowsPerCta = kRowKernelThreads / kThreadsPerRow;
};

// One thread group per query row of every (sample, head), up to the padded length: D = rowsum(dO ∘
// O) in fp32 and L · log2(e) (both 0 in the padding rows), and the row's dQ accumulator zeroed.
template <typename StaticC>
__global__ void __launch_bounds__(kRowKernelThreads)
    backward_preprocess_kernel(const __grid_constant__ BackwardArgs args) {
  constexpr KernelConfig C = StaticC::value;
  using Element = typename Shape<C>::Element;
  using Rows = RowKernelShape<C>;
  const WorkspaceLayout workspace = Workspace<C>::layout(args);
  const int head = static_cast<int>(blockIdx.y);
  const int sample = static_cast<int>(blockIdx.z);
  const int row = static_cast<int>(blockIdx.x) * Rows::kRowsPerCta +
                  static_cast<int>(threadIdx.x) / Rows::kThreadsPerRow;
  const int column = 8 * (static_cast<int>(threadIdx.x) % Rows::kThreadsPerRow);
  const bool valid = row < args.seq_len;
  const std::int64_t sequence = static_cast<std::int64_t>(sample) * args.n_heads + head;

  float sum = 0.0f;
  if (valid) {
    const std::int64_t offset =
        sample * args.batch_stride + row * args.seq_stride + head * args.head_stride + column;
    const uint4 o = *reinterpret_cast<const uint4*>(static_cast<const Element*>(args.O) + offset);
    const uint4 d_o =
        *reinterpret_cast<const uint4*>(static_cast<const Element*>(args.dO) + offset);
    const Element* const o_elements = reinterpret_cast<const Element*>(&o);
    const Element* const d_o_elements = reinterpret_cast<const Element*>(&d_o);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      sum += to_float(o_elements[i]) * to_float(d_o_elements[i]);
    float4* const accumulator =
        reinterpret_cast<float4*>(workspace.dq_accumulator + sequence * args.seq_len * C.d_head +
                                  dq_accumulator_offset(args.seq_len, row, column));
    accumulator[0] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    accumulator[1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
#pragma unroll
  for (int offset = Rows::kThreadsPerRow / 2; offset > 0; offset /= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (column == 0 && row < workspace.padded_len) {
    const std::int64_t index = sequence * workspace.padded_len + row;
    workspace.row_d[index] = sum;
    workspace.row_lse2[index] =
        valid ? args.softmax_lse[sequence * args.seq_len + row] * kLog2e : 0.0f;
    // The main kernel's unit counter and (deterministic) the query blocks' dQ semaphores start
    // at 0 in every launch: the main kernel runs after this kernel in stream order.
    if (row == 0 && sequence == 0) *workspace.unit_counter = 0u;
    if constexpr (C.deterministic) {
      if (row % C.B_r == 0)
        for (int group = 0; group < Shape<C>::kDqGroups; ++group)
          workspace
              .dq_semaphores[Workspace<C>::semaphore_index(args, sequence, group, row / C.B_r)] =
              0u;
    }
  }
}

// ---- 3. Postprocess ----------------------------------------------------------------------------

// dQ = scale · accumulator, rounded to the input dtype: one 16-byte store per thread.
template <typename StaticC>
__global__ void __launch_bounds__(kRowKernelThreads)
    backward_postprocess_kernel(const __grid_constant__ BackwardArgs args) {
  constexpr KernelConfig C = StaticC::value;
  using Element = typename Shape<C>::Element;
  using Rows = RowKernelShape<C>;
  const WorkspaceLayout workspace = Workspace<C>::layout(args);
  const int head = static_cast<int>(blockIdx.y);
  const int sample = static_cast<int>(blockIdx.z);
  const int row = static_cast<int>(blockIdx.x) * Rows::kRowsPerCta +
                  static_cast<int>(threadIdx.x) / Rows::kThreadsPerRow;
  const int column = 8 * (static_cast<int>(threadIdx.x) % Rows::kThreadsPerRow);
  if (row >= args.seq_len) return;
  const std::int64_t sequence = static_cast<std::int64_t>(sample) * args.n_heads + head;
  const float4* const accumulator = reinterpret_cast<const float4*>(
      workspace.dq_accumulator + sequence * args.seq_len * C.d_head +
      dq_accumulator_offset(args.seq_len, row, column));
  const float4 low = accumulator[0];
  const float4 high = accumulator[1];
  constexpr float kScale = Shape<C>::kScale;
  uint4 out;
  out.x = ptx::pack_pair<C.dtype>(kScale * low.x, kScale * low.y);
  out.y = ptx::pack_pair<C.dtype>(kScale * low.z, kScale * low.w);
  out.z = ptx::pack_pair<C.dtype>(kScale * high.x, kScale * high.y);
  out.w = ptx::pack_pair<C.dtype>(kScale * high.z, kScale * high.w);
  *reinterpret_cast<uint4*>(static_cast<Element*>(args.dQ) + sample * args.batch_stride +
                            row * args.seq_stride + head * args.head_stride + column) = out;
}

// ---- 2. Main kernel ----------------------------------------------------------------------------

// Named barriers of the consumers (0 is __syncthreads, which the producer would have to join).
// B6 takes the per-block barrier of both consumers (B5's kConsumersBarrier in the loop) apart:
//  - kConsumersBarrier (both consumers, 256 threads): a unit's epilogue only;
//  - kDqStagedBarrier + consumer (its 128 threads): its staged dQ block;
//  - kDsStoredBarrier + consumer (its 128 threads): its own dSᵀ rows of the block are stored,
//    what its own dQ steps read (at d_head 64 all of its dQ);
//  - kDsExchangeBarrier + 2 · reader + buffer (d_head 128): a one-way hand-over of the other
//    consumer's dSᵀ rows of that dSᵀ buffer to `reader`: the writer's 128 threads `bar.arrive`,
//    the reader's 128 `bar.sync` (256 in all). One id a buffer, so that a writer one block ahead
//    never arrives twice at an instance its reader has not completed (kernel.cuh's loop).
inline constexpr int kConsumersBarrier = 1;
inline constexpr int kDqStagedBarrier = 2;    // + consumer
inline constexpr int kDsStoredBarrier = 4;    // + consumer
inline constexpr int kDsExchangeBarrier = 6;  // + 2 · reader + dSᵀ buffer: ids 6 .. 9

// The hand-over's two sides, with the barrier id and count as immediates: a branch on the
// (warp-uniform) consumer and buffer instead of an id computed into a register, which a consumer
// at 240 registers would have to keep or spill (B5.md's second experiment found such an id
// reloaded from local memory before its barrier).
template <int kId>
__device__ __forceinline__ void hand_over_sync() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(kId), "n"(2 * kWarpgroupWarps * 32) : "memory");
}
template <int kId>
__device__ __forceinline__ void hand_over_arrive() {
  asm volatile("bar.arrive %0, %1;\n" ::"n"(kId), "n"(2 * kWarpgroupWarps * 32) : "memory");
}
// `reader` waits for the other consumer's dSᵀ rows of `buffer`.
__device__ __forceinline__ void wait_for_other_rows(int reader, int buffer) {
  if (reader == 0) {
    if (buffer == 0)
      hand_over_sync<kDsExchangeBarrier + 0>();
    else
      hand_over_sync<kDsExchangeBarrier + 1>();
  } else {
    if (buffer == 0)
      hand_over_sync<kDsExchangeBarrier + 2>();
    else
      hand_over_sync<kDsExchangeBarrier + 3>();
  }
}
// `writer`'s rows of `buffer` are stored: the other consumer (the reader) may go on.
__device__ __forceinline__ void hand_over_rows(int writer, int buffer) {
  if (writer == 1) {  // reader 0
    if (buffer == 0)
      hand_over_arrive<kDsExchangeBarrier + 0>();
    else
      hand_over_arrive<kDsExchangeBarrier + 1>();
  } else {  // reader 1
    if (buffer == 0)
      hand_over_arrive<kDsExchangeBarrier + 2>();
    else
      hand_over_arrive<kDsExchangeBarrier + 3>();
  }
}

// The deterministic option's semaphores (global memory, GPU scope). A reader acquires the count
// before its bulk reduce-add; the writer releases it once its own add has completed. The async
// proxy's fences order the bulk operation (an async-proxy access of global memory) after the
// acquire on one side and its completed writes before the release on the other.
__device__ __forceinline__ unsigned load_acquire(const unsigned* address) {
  unsigned value;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n"
               : "=r"(value)
               : "l"(reinterpret_cast<std::uint64_t>(address))
               : "memory");
  return value;
}
__device__ __forceinline__ void store_release(unsigned* address, unsigned value) {
  asm volatile(
      "st.release.gpu.global.u32 [%0], %1;\n" ::"l"(reinterpret_cast<std::uint64_t>(address)),
      "r"(value)
      : "memory");
}
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}
// Waits until every bulk group of this thread has completed, its writes included (the `.read`
// form only waits until the sources have been read).
__device__ __forceinline__ void bulk_wait_complete() {
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// The persistent schedule (what B5 adds; backward-track.md §4): gridDim.x CTAs, at most one per
// SM, each looping over work units (a KV block of one sequence) in KvUnitOrder's order: CTA b
// takes unit b first, then the next unit a global counter hands out (workspace.unit_counter,
// zeroed by the preprocess), so a CTA that finishes early takes the next unit at once and the
// heaviest units (the lowest KV blocks under the mask) go out first. The producer thread takes
// the units and tells the consumers through shared memory, guarded by K and V's barriers: it
// writes the unit and loads its K and V once the consumers' dK and dV of the previous unit have
// left K's and V's tiles (KV_empty), and the consumers read it once K and V have landed
// (KV_full); a unit of -1 ends the loop.
//
// The deterministic option (C.deterministic): query block i of a sequence receives its dQ
// contributions in one fixed order, KV block 0 first (at d_head 64 consumer 0 before consumer 1
// of each KV block), so the fp32 sums, and dQ, are the same bits on every run. Semaphore
// (sequence, group, i) counts the adds that block has received; the KV block j's consumer waits
// until it reads its rank (KV_block j · adds per group [+ consumer]), adds, waits for its add to
// complete, and stores rank + 1. Under the mask the KV blocks that reach block i are exactly
// 0 .. some j_max, so the rank is j's count of predecessors there too. The query blocks are walked
// from the last down in this mode: under the mask every KV block then starts at the same block
// (the last) and a unit's waits are on blocks its predecessor (started at about the same time)
// reaches at the same iteration, not two iterations later for each KV block of difference.
//
// Why the waits cannot deadlock. (a) A unit only waits for adds of units of the same sequence
// and a lower KV block, which come earlier in KvUnitOrder's order (within a section, KV block by
// KV block), so a unit waits only on lower units; inside a unit, consumer 1 waits only for
// consumer 0's add of the same block (d_head 64), which consumer 0 makes waiting on lower units
// alone: B6 has no barrier of both consumers in the loop, and what else ties consumer 0 to
// consumer 1 comes earlier in consumer 1's program than that wait (the query slot of a block
// `stages` blocks back, which consumer 1 releases before its add of that block; at d_head 128,
// where each consumer adds its own column group and waits for lower units only, the dSᵀ
// hand-over of the same or the last block, which either consumer makes before its add of the
// block). No wait of one consumer is on a step the other makes only after a semaphore wait of a
// later block, and the ranks keep their fixed order: B6 changes who waits for whose dSᵀ, not the
// order of the adds. (b) The units are handed out in increasing order
// (CTA b's first unit is b < gridDim.x, every later one gridDim.x plus the counter's next value),
// so a CTA takes its units in increasing order and runs each after its previous one; and every
// CTA of the launch is resident at once (at most one CTA per SM, and the kernel's shared memory
// and 384 threads allow one: launch_backward sizes the grid so). Take the lowest unfinished
// unit u. If no CTA holds it yet, every unit handed out so far is lower (they go out in order),
// hence finished, so the next CTA to ask gets u. The CTA that holds u has finished every unit it
// took before (all lower), so it runs u, and every add u waits for belongs to a lower, finished
// unit: u's waits end and u finishes. By induction every unit finishes.
template <typename StaticC>
__global__ void __launch_bounds__(32 * StaticC::value.n_warps, 1)
    flash_backward_kernel(const __grid_constant__ BackwardArgs args,
                          const __grid_constant__ BackwardTensorMaps maps) {
  constexpr KernelConfig C = StaticC::value;
  using Sh = Shape<C>;
  using Element = typename Sh::Element;
  using Pipeline = pipeline::MbarrierPipeline<Sh::kStages>;
  using PipelineState = pipeline::PipelineState<Sh::kStages>;

  // wgmma and TMA address the tiles with the 128-byte swizzle, whose pattern repeats every 1024
  // bytes: the tiles start on such a boundary (kSmemBytes reserves kHopperSmemAlignment bytes).
  extern __shared__ uint4 smem[];
  const std::uint32_t misalignment = ptx::smem_address(smem) % kHopperSmemAlignment;
  char* const base =
      reinterpret_cast<char*>(smem) + (kHopperSmemAlignment - misalignment) % kHopperSmemAlignment;
  Element* const K_tile = reinterpret_cast<Element*>(base + Sh::kKTile);  // later dK
  Element* const V_tile = reinterpret_cast<Element*>(base + Sh::kVTile);  // later dV
  Element* const dS_tile = reinterpret_cast<Element*>(base + Sh::kdSTile);
  const float* const lse_vector = reinterpret_cast<const float*>(base + Sh::kLseVector);
  const float* const row_d_vector = reinterpret_cast<const float*>(base + Sh::kRowDVector);
  volatile int* const unit_slot = reinterpret_cast<volatile int*>(base + Sh::kUnitSlot);
  const std::uint32_t base_address = ptx::smem_address(base);
  const std::uint32_t K_address = base_address + Sh::kKTile;
  const std::uint32_t V_address = base_address + Sh::kVTile;
  const std::uint32_t Q_address = base_address + Sh::kQTile;    // stage 0
  const std::uint32_t dO_address = base_address + Sh::kdOTile;  // stage 0
  // The barriers: the query pipeline's (full and empty per stage), then K and V's full and empty.
  const Pipeline queries(base_address + Sh::kBarriers);
  const std::uint32_t KV_full = base_address + Sh::kBarriers + Pipeline::kBarrierBytes;
  const std::uint32_t KV_empty = KV_full + 8;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int warpgroup = warp / kWarpgroupWarps;

  const WorkspaceLayout workspace = Workspace<C>::layout(args);
  const int n_q_blocks = (args.seq_len + C.B_r - 1) / C.B_r;
  const int n_kv_blocks = (args.seq_len + C.B_c - 1) / C.B_c;
  const KvUnitOrder order =
      KvUnitOrder::make(n_kv_blocks, args.n_heads, args.batch, static_cast<int>(gridDim.x));

  // ---- Prologue: the barriers ------------------------------------------------------------------
  if (tid == 0) {
    ptx::prefetch_tensor_map(&maps.q);
    ptx::prefetch_tensor_map(&maps.d_o);
    ptx::prefetch_tensor_map(&maps.k);
    ptx::prefetch_tensor_map(&maps.v);
    // Every consumer thread releases a slot (not one lane a warp): each thread's own loads of the
    // slot's L and D vectors are then ordered before the producer's refill by its own arrival,
    // an order compute-sanitizer's racecheck follows (docs/versions/B4.md, "Correctness").
    queries.init(Sh::kConsumerThreads);
    ptx::mbarrier_init(KV_full, 1);
    // Every consumer thread arrives once a unit, after its last access to K's and V's tiles (its
    // dK and dV stores) and to the unit slot; thread 0 only once the TMA stores of dK and dV
    // have read the tiles. Each thread's accesses are then ordered before the producer's next
    // write by its own arrival, as the query slots' are.
    ptx::mbarrier_init(KV_empty, Sh::kConsumerThreads);
    ptx::fence_barrier_init();
  }
  __syncthreads();  // the barriers are initialised before anyone waits on them; the last CTA
                    // barrier (each role is one branch below, as ptxas requires of setmaxnreg)

  if (warpgroup == 0) {
    // ---- Producer: each unit's K and V and its query blocks (Q, dO, L·log2(e), D) -------------
    ptx::setmaxnreg_dec<Sh::kProducerRegisters>();
    if (tid == 0) {
      PipelineState state;
      int linear = static_cast<int>(blockIdx.x);
      for (int taken = 0;; ++taken) {
        if (linear >= order.count()) {
          // Once the consumers are done with the last unit (and have read its slot): stop them.
          if (taken > 0) ptx::mbarrier_wait(KV_empty, (taken - 1) & 1);
          *unit_slot = -1;
          ptx::mbarrier_arrive(KV_full);  // no transaction: the consumers wake and stop
          break;
        }
        const KvUnit unit = order.unit(linear);
        const int kv_start = unit.kv_block * C.B_c;
        // The sequence's L·log2(e) and D vectors start here (one offset for both: the producer
        // runs on 24 registers).
        const std::int64_t vectors =
            (static_cast<std::int64_t>(unit.sample) * args.n_heads + unit.head) *
            workspace.padded_len;
        const int first_q_block = args.causal ? kv_start / C.B_r : 0;
        const int n_iterations = n_q_blocks - first_q_block;
        // The unit and its K and V, once the consumers are done with the last unit's K and V
        // tiles (its dK and dV have left them) and have read the last unit's slot.
        const auto load_unit = [&] {
          if (taken > 0) ptx::mbarrier_wait(KV_empty, (taken - 1) & 1);
          *unit_slot = linear;
          ptx::mbarrier_arrive_expect_tx(KV_full, 2 * Sh::kKVTileBytes);
          const TileCoordinates kv_from{kv_start, unit.head, unit.sample};
          load_tile<C, C.B_c>(K_address, &maps.k, KV_full, kv_from);
          load_tile<C, C.B_c>(V_address, &maps.v, KV_full, kv_from);
        };
        // After the first unit, the first `stages` query blocks go out before K and V: their
        // slots free up while the consumers finish the last unit, before its epilogue frees K's
        // and V's tiles, so they are in flight (or landed) when the unit starts.
        const int blocks_before_kv = taken == 0 ? 0 : min(Sh::kStages, n_iterations);
        for (int iteration = 0; iteration < n_iterations; ++iteration, state.advance()) {
          if (iteration == blocks_before_kv) load_unit();
          const int q_block =
              C.deterministic ? n_q_blocks - 1 - iteration : first_q_block + iteration;
          const int q_start = q_block * C.B_r;
          queries.producer_acquire(state);
          const std::uint32_t full = queries.producer_expect_bytes(state, Sh::kQueryBlockBytes);
          const TileCoordinates from{q_start, unit.head, unit.sample};
          load_tile<C, C.B_r>(Q_address + state.index * Sh::kQueryTileBytes, &maps.q, full, from);
          load_tile<C, C.B_r>(dO_address + state.index * Sh::kQueryTileBytes, &maps.d_o, full,
                              from);
          ptx::bulk_copy_global_to_shared(
              base_address + Sh::kLseVector + state.index * Sh::kVectorBytes,
              workspace.row_lse2 + vectors + q_start, Sh::kVectorBytes, full);
          ptx::bulk_copy_global_to_shared(
              base_address + Sh::kRowDVector + state.index * Sh::kVectorBytes,
              workspace.row_d + vectors + q_start, Sh::kVectorBytes, full);
        }
        if (blocks_before_kv == n_iterations) load_unit();
        // The next unit, asked for once this one's last query block is issued: late enough that
        // the units go to the CTAs in the order they run out of work (a CTA asking at the start
        // of a unit would reserve the next one a whole unit early), early enough that the
        // counter's round trip hides behind the consumers' last query blocks.
        linear =
            static_cast<int>(gridDim.x) + static_cast<int>(atomicAdd(workspace.unit_counter, 1u));
      }
    }
  } else {
    // ---- Consumers -----------------------------------------------------------------------------
    ptx::setmaxnreg_inc<Sh::kConsumerRegisters>();
    const int consumer = warpgroup - 1;
    const int consumer_tid = tid - kWarpgroupWarps * 32;       // 0 .. kConsumerThreads - 1
    const int warp_row = 16 * (warp % kWarpgroupWarps);        // the warp's rows of a 64-row tile
    const int key_row = consumer * Sh::kGroupKeys + warp_row;  // ... its keys of the KV block
    // The consumer's thread that issues its dQ reduce-adds (and waits for their reads).
    const bool dq_issuer = consumer_tid % (kWarpgroupWarps * 32) == 0;
    float* const dq_stage =
        reinterpret_cast<float*>(base + Sh::kDqStage) + consumer * (Sh::kDqStageBytes / 4);
    const std::uint32_t dq_stage_address =
        base_address + Sh::kDqStage + consumer * Sh::kDqStageBytes;
    // The consumer's 64-column group of dQ (dq_accumulator_offset).
    const int dq_group_index = Sh::kDqSplitsColumns ? consumer : 0;

    // This consumer's wgmma descriptors (Q and dO of stage 0, dSᵀ of buffer 0), made once.
    const OperandDescriptors descriptors = make_operand_descriptors<C>(
        K_address, V_address, Q_address, dO_address, base_address + Sh::kdSTile, consumer);

    // This thread's columns (queries) of Sᵀ, for the mask.
    const int thread_query_column = 2 * (lane % 4);

    PipelineState state;  // the slot this iteration reads
    for (int taken = 0;; ++taken) {
      ptx::mbarrier_wait(KV_full, taken & 1);
      const int linear = *unit_slot;
      if (linear < 0) break;
      const KvUnit unit = order.unit(linear);
      const int kv_start = unit.kv_block * C.B_c;
      const std::int64_t sequence =
          static_cast<std::int64_t>(unit.sample) * args.n_heads + unit.head;
      float* const dq_group =
          workspace.dq_accumulator + sequence * args.seq_len * C.d_head +
          dq_group_index * static_cast<std::int64_t>(args.seq_len) * kSubTileColumns;
      const int kv_rows = args.seq_len - kv_start;  // valid rows of the KV block (may exceed B_c)
      // This thread's rows (keys) of Sᵀ, for the mask.
      const int thread_key = kv_start + key_row + lane / 4;

      // Causal: the query blocks entirely above the diagonal (every query before the block's
      // first key) are skipped; only blocks that reach past it apply the element mask.
      const int first_q_block = args.causal ? kv_start / C.B_r : 0;
      const int n_iterations = n_q_blocks - first_q_block;

      Accumulators<1, Sh::kGradientNTiles> dV;
      Accumulators<1, Sh::kGradientNTiles> dK;
      zero(dV);
      zero(dK);

      for (int iteration = 0; iteration < n_iterations; ++iteration) {
        const int q_block =
            C.deterministic ? n_q_blocks - 1 - iteration : first_q_block + iteration;
        const int q_start = q_block * C.B_r;
        const std::uint32_t stage_bytes = state.index * Sh::kQueryTileBytes;
        const float* const lse_stage = lse_vector + state.index * C.B_r;
        const float* const row_d_stage = row_d_vector + state.index * C.B_r;
        queries.consumer_wait(state);

        // ---- Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ, both issued at once ---------------------------------
        Accumulators<1, Sh::kScoreNTiles> S;
        Accumulators<1, Sh::kScoreNTiles> dP;
        issue_transposed_scores<C>(S, descriptors.K_rows,
                                   wgmma::advance_descriptor(descriptors.Q, stage_bytes));
        issue_transposed_scores<C>(dP, descriptors.V_rows,
                                   wgmma::advance_descriptor(descriptors.dO, stage_bytes));
        wait_for_gemms<1>(S[0]);

        // ---- P = exp(S / sqrt(d) - L), rounded to 16 bits, while dPᵀ runs ------------------
        // The diagonal blocks mask key > query; a KV block past the sequence's end masks its
        // zero-filled keys (exp(0 - L) could overflow where L < -88, and inf · 0 in dQ is NaN);
        // the other blocks have no masked element.
        const bool diagonal = args.causal && q_start < kv_start + C.B_c - 1;
        const bool masked_block = diagonal || kv_rows < C.B_c;
        AFragments<1, Sh::kQuerySlices> P;
        {
          // Templated on whether the block masks anything, so the blocks that do not (all but
          // the diagonal ones and a partial last KV block) carry no per-element mask code.
          auto probabilities = [&](auto masked) {
            constexpr bool kMasked = decltype(masked)::value;
#pragma unroll
            for (int n = 0; n < Sh::kScoreNTiles; ++n) {
              const int column = thread_query_column + 8 * n;
              const float2 lse2 = *reinterpret_cast<const float2*>(lse_stage + column);
#pragma unroll
              for (int i = 0; i < 4; ++i) {
                float p =
                    ptx::exp2_approx(S[0][n][i] * Sh::kScaleLog2 - (i % 2 == 0 ? lse2.x : lse2.y));
                if constexpr (kMasked) {
                  const int key = thread_key + 8 * (i / 2);
                  if (key >= args.seq_len || (diagonal && key > q_start + column + i % 2)) p = 0.0f;
                }
                S[0][n][i] = p;
              }
            }
          };
          if (masked_block)
            probabilities(std::true_type{});
          else
            probabilities(std::false_type{});
          // Rounded once, here: the A operand of dV += Pᵀ·dO and the P of dS = P ∘ (dP - D) are
          // the same 16-bit values (as in the low-precision reference).
          convert_to_A_fragments<C.dtype>(P, S);
        }

        // ---- dV += Pᵀ·dO, P from the registers it was computed in ----------------------------
        issue_gradient<C>(dV, P, wgmma::advance_descriptor(descriptors.dO_mn, stage_bytes));
        wait_for_gemms<1>(dP[0]);  // dPᵀ is done (dV may still run)

        // ---- dS = P ∘ (dP - D), rounded to 16 bits -----------------------------------------
        AFragments<1, Sh::kQuerySlices> dS;
#pragma unroll
        for (int n = 0; n < Sh::kScoreNTiles; ++n) {
          const float2 row_d =
              *reinterpret_cast<const float2*>(row_d_stage + thread_query_column + 8 * n);
#pragma unroll
          for (int i = 0; i < 4; i += 2) {
            const float2 p = ptx::unpack_pair<C.dtype>(A_pair_of(P, 0, n, i));
            dP[0][n][i] = p.x * (dP[0][n][i] - row_d.x);
            dP[0][n][i + 1] = p.y * (dP[0][n][i + 1] - row_d.y);
          }
        }
        convert_to_A_fragments<C.dtype>(dS, dP);

        // ---- dSᵀ to shared memory for dQ (a row per key; buffer iteration % 2) ---------------
        const int dS_buffer = iteration % 2;
        const std::uint32_t dS_bytes = dS_buffer * Sh::kdSTileBytes;
        store_A_fragments<C, C.B_c, Sh::kQuerySlices>(
            dS_tile + dS_buffer * (Sh::kdSTileBytes / kElementBytes), key_row, dS, lane);
        ptx::fence_proxy_async_shared();  // the stores, visible to the wgmmas of dQ

        // ---- B6: the other consumer may read these rows (d_head 128) -------------------------
        // The writer's side of the one-way hand-over (its reader waits in front of the dQ steps
        // over these keys, below). Coming after this thread's wait for dQ of the last block, the
        // arrival is also the "consumed" signal for the other buffer: see below dQ. It comes
        // before dK's issue, so a reader that is ahead waits for the stores alone.
        if constexpr (Sh::kDqSplitsColumns) hand_over_rows(consumer, dS_buffer);

        // ---- dK += dSᵀ·Q, dS from registers ------------------------------------------------
        issue_gradient<C>(dK, dS, wgmma::advance_descriptor(descriptors.Q_mn, stage_bytes));

        // ---- The warpgroup's own barrier: its dSᵀ rows are in shared memory -------------------
        // B5 met both consumers here. Its other duties stay with this barrier of the consumer's
        // own threads: every warp of it is done with dQ of the last block, so with its own rows
        // of the other dSᵀ buffer, which it writes again next block, and with its staged dQ
        // block, whose reduce-add has read it (its issuer waited for that before arriving). At
        // d_head 64 a consumer's dQ reads its own rows alone, and this is all it waits for.
        if (dq_issuer) ptx::tma_store_wait_read<0>();
        ptx::named_barrier_sync(kDsStoredBarrier + consumer, kWarpgroupWarps * 32);

        // ---- dQ = dS·K: over the consumer's own keys first ----------------------------------
        // d_head 64: dS_m starts at the consumer's keys, and they are its whole dQ. d_head 128:
        // dS_m and K_mn start at key 0; consumer c's own keys are reduction steps [4c, 4c + 4)
        // (a branch on the consumer, so the steps are immediates: steps computed from the
        // consumer index spilled 20-40 bytes instead of B5's 16, 56-68 instead of 12 with
        // `deterministic`), and the other consumer's are issued once its rows of this
        // block are in: then the ahead consumer's tensor cores have dK and half of dQ to run
        // while it waits.
        //
        // Why one barrier id a buffer suffices for the hand-over: the writer arrives at the
        // instance of block i again only at block i + 2, after it passed its own wait of block
        // i + 1, which needs every thread of the reader to have arrived at block i + 1, hence
        // to have passed this wait of block i (the instance was complete). Why the writer may
        // store its rows of this buffer again at block i + 2: the reader's arrival at block
        // i + 1 comes after its dQ of block i completed (every thread after its own warp's
        // wait), and the writer stores at block i + 2 only after its wait on that arrival.
        Accumulators<1, Sh::kDqNTiles> dQ;
        const std::uint64_t dS_m = wgmma::advance_descriptor(descriptors.dS_m, dS_bytes);
        if constexpr (Sh::kDqSplitsColumns) {
          if (consumer == 0) {
            issue_dq<C, Sh::kGroupDqSlices>(dQ, dS_m, descriptors.K_mn, 0, false);
            wait_for_other_rows(0, dS_buffer);
            issue_dq<C, Sh::kGroupDqSlices>(dQ, dS_m, descriptors.K_mn, Sh::kGroupDqSlices, true);
          } else {
            issue_dq<C, Sh::kGroupDqSlices>(dQ, dS_m, descriptors.K_mn, Sh::kGroupDqSlices, false);
            wait_for_other_rows(1, dS_buffer);
            issue_dq<C, Sh::kGroupDqSlices>(dQ, dS_m, descriptors.K_mn, 0, true);
          }
        } else {
          issue_dq<C, Sh::kDqSlices>(dQ, dS_m, descriptors.K_mn, 0, false);
        }
        wait_for_gemms<0>(dQ[0]);  // dV, dK and dQ are done: the slot is free
        ptx::fence_operands(dV[0]);
        ptx::fence_operands(dK[0]);
        // P and dS were the A operands of dV and dK up to here: their registers stay theirs.
        fence_fragments(P);
        fence_fragments(dS);
        queries.consumer_release(state);
        state.advance();

        // ---- dQ staged in shared memory and added by the copy engine -------------------------
        // The warp's 16 rows of the consumer's 64 x 64 block, in the accumulator's layout
        // (8-column chunks XOR-ed with row % 8, conflict-free stores); then one thread adds the
        // block's valid rows to the accumulator with one bulk reduce-add: rows past the
        // sequence's end are not sent, so no row needs a check.
#pragma unroll
        for (int half_row = 0; half_row < 2; ++half_row) {
          const int row = warp_row + lane / 4 + 8 * half_row;
#pragma unroll
          for (int n = 0; n < Sh::kDqNTiles; ++n) {
            const int column = (8 * n) ^ ((row & 7) << 3);
            *reinterpret_cast<float2*>(dq_stage + row * kSubTileColumns + column +
                                       thread_query_column) =
                make_float2(dQ[0][n][2 * half_row], dQ[0][n][2 * half_row + 1]);
          }
        }
        ptx::fence_proxy_async_shared();  // the stores, visible to the bulk reduce-add
        ptx::named_barrier_sync(kDqStagedBarrier + consumer, kWarpgroupWarps * 32);
        if (dq_issuer) {
          const int rows = args.seq_len - q_start < C.B_r ? args.seq_len - q_start : C.B_r;
          unsigned* semaphore = nullptr;
          unsigned rank = 0;
          if constexpr (C.deterministic) {
            // This add's place in the block's fixed order (see above the kernel), and the wait
            // for every add before it to have completed.
            semaphore = workspace.dq_semaphores +
                        Workspace<C>::semaphore_index(args, sequence, dq_group_index, q_block);
            rank = static_cast<unsigned>(unit.kv_block * Sh::kAddsPerGroup +
                                         (Sh::kAddsPerGroup > 1 ? consumer : 0));
            while (load_acquire(semaphore) != rank) {
            }
            fence_proxy_async_global();  // the acquire, before the bulk add's global accesses
          }
          ptx::bulk_reduce_add_f32(dq_group + static_cast<std::int64_t>(q_start) * kSubTileColumns,
                                   dq_stage_address,
                                   static_cast<std::uint32_t>(rows * kSubTileColumns * 4));
          ptx::tma_store_commit();
          if constexpr (C.deterministic) {
            bulk_wait_complete();        // the add has written the accumulator
            fence_proxy_async_global();  // ... and its writes come before the release
            store_release(semaphore, rank + 1);
          }
        }
      }

      // ---- Epilogue: dK · scale and dV through K's and V's tiles, then TMA stores -----------
      ptx::named_barrier_sync(kConsumersBarrier,
                              Sh::kConsumerThreads);  // every consumer is done reading K and V
      store_accumulators<C, C.B_c, Sh::kGradientNTiles>(K_tile, key_row, dK, lane, Sh::kScale);
      store_accumulators<C, C.B_c, Sh::kGradientNTiles>(V_tile, key_row, dV, lane);
      ptx::fence_proxy_async_shared();
      ptx::named_barrier_sync(kConsumersBarrier, Sh::kConsumerThreads);
      if (consumer_tid == 0) {
        const TileCoordinates to{kv_start, unit.head, unit.sample};
        store_tile<C, C.B_c>(&maps.d_k, K_address, to);
        store_tile<C, C.B_c>(&maps.d_v, V_address, to);
        ptx::tma_store_commit();
        // The tiles are free for the next unit's K and V once the stores have read them.
        ptx::tma_store_wait_read<0>();
      }
      ptx::mbarrier_arrive(KV_empty);
    }
    // The CTA's shared memory stays until the copy engine has read it: the last dQ blocks.
    if (dq_issuer) ptx::tma_store_wait_read<0>();
  }
}

// ---- Launch --------------------------------------------------------------------------------

template <KernelConfig C>
std::size_t backward_workspace_bytes(const BackwardArgs& args) {
  return Workspace<C>::bytes(args);
}

// The tensor maps of one launch: Q and dO in boxes of B_r rows, K, V, dK and dV in boxes of B_c
// rows, each over its tensor's real extents. Throws TensorMapError when a map cannot be encoded.
template <KernelConfig C>
BackwardTensorMaps make_backward_tensor_maps(const BackwardArgs& args) {
  const AttentionTensorLayout query{args.batch,        args.seq_len,    args.n_heads,
                                    args.batch_stride, args.seq_stride, args.head_stride};
  const AttentionTensorLayout key_value{args.batch,         args.seq_len,
                                        args.n_kv_heads,    args.kv_batch_stride,
                                        args.kv_seq_stride, args.kv_head_stride};
  const TensorMapSpec q = attention_tensor_map_spec(C.dtype, C.d_head, query, C.B_r);
  const TensorMapSpec kv = attention_tensor_map_spec(C.dtype, C.d_head, key_value, C.B_c);
  return {encode_tensor_map(q, args.Q),   encode_tensor_map(q, args.dO),
          encode_tensor_map(kv, args.K),  encode_tensor_map(kv, args.V),
          encode_tensor_map(kv, args.dK), encode_tensor_map(kv, args.dV)};
}

// The three kernels in stream order. B5 runs multi-head attention only (n_kv_heads == n_heads);
// any other record is refused with cudaErrorInvalidValue before anything is launched.
template <KernelConfig C>
cudaError_t launch_backward(const BackwardArgs& args, cudaStream_t stream) {
  if (args.n_kv_heads != args.n_heads || args.workspace == nullptr || args.seq_len <= 0 ||
      args.batch <= 0 || args.n_heads <= 0 || args.softmax_lse == nullptr)
    return cudaErrorInvalidValue;
  using Sh = Shape<C>;
  constexpr auto kMain = &flash_backward_kernel<StaticConfig<C>>;
  if (const cudaError_t status = opt_in_dynamic_smem<kMain, Sh::kSmemBytes>();
      status != cudaSuccess)
    return status;
  const BackwardTensorMaps maps = make_backward_tensor_maps<C>(args);
  const int padded_len = Workspace<C>::padded_len(args);
  const auto row_grid = [&](int rows) {
    return dim3(static_cast<unsigned>((rows + RowKernelShape<C>::kRowsPerCta - 1) /
                                      RowKernelShape<C>::kRowsPerCta),
                static_cast<unsigned>(args.n_heads), static_cast<unsigned>(args.batch));
  };
  backward_preprocess_kernel<StaticConfig<C>>
      <<<row_grid(padded_len), kRowKernelThreads, 0, stream>>>(args);
  if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  // The persistent grid: one CTA an SM (the kernel's shared memory and 384 threads allow no
  // more), never more CTAs than work units. The deterministic option's waits need every CTA
  // resident at once (the proof above flash_backward_kernel), which this size guarantees.
  const int units = (args.seq_len + C.B_c - 1) / C.B_c * args.n_heads * args.batch;
  const int ctas =
      scheduling::persistent_grid_size(units, scheduling::current_device_sm_count(), 1);
  kMain<<<static_cast<unsigned>(ctas), Sh::kThreads, Sh::kSmemBytes, stream>>>(args, maps);
  if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  backward_postprocess_kernel<StaticConfig<C>>
      <<<row_grid(args.seq_len), kRowKernelThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

// B6 runs any head count and sequence length and applies the causal mask on request, as its
// descriptor declares; compiled for sm_90a only, it runs on compute capability 9.0 alone, which
// the entry records for launch validation. The entry's attributes are the main kernel's.
template <KernelConfig C>
void register_kernel(KernelRegistry& registry, int step) {
  static_assert(is_statically_valid(C, Pass::backward),
                "invalid KernelConfig (see static_config_violation)");
  KernelEntry entry = make_backward_kernel_entry<C>(
      step, &launch_backward<C>, &backward_workspace_bytes<C>,
      reinterpret_cast<const void*>(&flash_backward_kernel<StaticConfig<C>>), Shape<C>::kSmemBytes,
      Shape<C>::kThreads, /*exact_compute_capability=*/90);
  entry.supports_causal = versions::kStepB6.causal;
  registry.add(std::move(entry));
}

}  // namespace flashscope::b06
