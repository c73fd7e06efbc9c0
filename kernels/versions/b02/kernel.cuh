// FlashAttention-2 backward, step B2 (backward-track.md §4): step B1's kernels with the memory
// techniques of the forward track applied. The FlashAttention-2 paper's Algorithm 2 on Ampere
// instructions (mma.sync m16n8k16, ldmatrix, cp.async), in three kernels:
//  1. the preprocess: D = rowsum(dO ∘ O) and L · log2(e) per query row (fp32), and the fp32 dQ
//     accumulator zeroed;
//  2. the main kernel: one CTA per (KV block, head, sample) holds K_j and V_j in shared memory
//     and dK_j, dV_j in registers while it walks the query blocks; for each it recomputes
//     P = exp(S - L), forms dP = dO·Vᵀ and dS = P ∘ (dP - D), accumulates dV += Pᵀ·dO and
//     dK += dSᵀ·Q, and adds its share of dQ = dS·K to the accumulator with fp32 atomics (RED);
//  3. the postprocess: dQ · scale converted to the input dtype.
// What B2 changes in the main kernel (B1 has none of it):
//  - every shared-memory tile is swizzled (layout.cuh), so the accumulator stores and the
//    ldmatrix phases of a warp spread over all banks;
//  - Q, dO, L and D have two stages: the next query block's copy is issued right after the
//    barrier that opens a block and lands while the block is computed;
//  - the fragment loads of Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ and dQ = dS·K are double-buffered: the next
//    slice's ldmatrix is issued before this slice's mmas (block_gemms.cuh);
//  - a warp's own half of P and dS stays in the registers it computed them in for dV += Pᵀ·dO
//    and dK += dSᵀ·Q; only the pair's other half (and dS for dQ) goes through shared memory;
//  - dQ is added with 8-byte vector reductions (red.global.add.v2.f32) on sm_90.
#pragma once

#include <cstdint>
#include <utility>

#include "kernels/common/backward_args.hpp"
#include "kernels/common/config.hpp"
#include "kernels/common/kernel_entry.cuh"
#include "kernels/common/ptx.cuh"
#include "kernels/common/registry.hpp"
#include "kernels/versions/b02/block_gemms.cuh"
#include "kernels/versions/b02/fragments.cuh"
#include "kernels/versions/b02/gmem_smem_copy.cuh"
#include "kernels/versions/b02/layout.cuh"
#include "kernels/versions/b02/step.hpp"

namespace flashscope::b02 {

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
    float4* const accumulator = reinterpret_cast<float4*>(
        workspace.dq_accumulator + (sequence * args.seq_len + row) * C.d_head + column);
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
      workspace.dq_accumulator + (sequence * args.seq_len + row) * C.d_head + column);
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

template <typename StaticC>
__global__ void __launch_bounds__(32 * StaticC::value.n_warps)
    flash_backward_kernel(const __grid_constant__ BackwardArgs args) {
  constexpr KernelConfig C = StaticC::value;
  using Sh = Shape<C>;
  using Element = typename Sh::Element;

  extern __shared__ uint4 smem[];  // uint4: the 16-byte alignment every chunk access needs
  Element* const tiles = reinterpret_cast<Element*>(smem);
  Element* const K_tile = tiles + Sh::kKTile;  // later dK
  Element* const V_tile = tiles + Sh::kVTile;  // later dV
  Element* const P_tile = tiles + Sh::kPTile;
  Element* const dS_tile = tiles + Sh::kdSTile;
  // Stage s of Q, dO, L·log2(e) and D is these plus s x kStageElements (s x kVectorStageBytes).
  Element* const Q_tile = tiles + Sh::kQTile;
  Element* const dO_tile = tiles + Sh::kdOTile;
  float* const lse_tile =
      reinterpret_cast<float*>(reinterpret_cast<char*>(smem) + Sh::kLseByteOffset);
  float* const row_d_tile =
      reinterpret_cast<float*>(reinterpret_cast<char*>(smem) + Sh::kRowDByteOffset);
  constexpr std::uint32_t kStageBytes = Sh::kStageElements * kElementBytes;
  constexpr int kVectorStageFloats = Sh::kVectorStageBytes / 4;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int key_row = Sh::kGroupKeys * (warp / 2);  // the warp's keys in the KV block
  const int half = warp % 2;
  const int query_column = half * Sh::kHalfQueries;          // its queries of Sᵀ, dPᵀ and dQ
  const int partner_column = (1 - half) * Sh::kHalfQueries;  // its pair partner's queries
  const int d_column = half * Sh::kHalfColumns;              // its d_head columns of dV and dK
  const int dq_column = (warp / 2) * Sh::kDqColumns;         // its d_head columns of dQ

  // ldmatrix lanes, each placed at the warp's region of its tile (fragments.cuh); the Q and dO
  // lanes point at stage 0 and are shifted to the stage in use.
  const std::uint32_t K_address = ptx::smem_address(K_tile);
  const LdmatrixLane<C, C.B_c> K_rows = row_major_lane<C, C.B_c>(K_address, key_row, 0, lane);
  const LdmatrixLane<C, C.B_c> K_columns = row_major_lane<C, C.B_c>(K_address, 0, dq_column, lane);
  const LdmatrixLane<C, C.B_c> V_rows =
      row_major_lane<C, C.B_c>(ptx::smem_address(V_tile), key_row, 0, lane);
  const LdmatrixLane<C, C.B_r> Q_paired =
      paired_lane<C, C.B_r>(ptx::smem_address(Q_tile), query_column, 0, lane);
  const LdmatrixLane<C, C.B_r> dO_paired =
      paired_lane<C, C.B_r>(ptx::smem_address(dO_tile), query_column, 0, lane);
  const LdmatrixLane<C, C.B_r> Q_own =
      row_major_lane<C, C.B_r>(ptx::smem_address(Q_tile), query_column, d_column, lane);
  const LdmatrixLane<C, C.B_r> dO_own =
      row_major_lane<C, C.B_r>(ptx::smem_address(dO_tile), query_column, d_column, lane);
  const LdmatrixLane<C, C.B_r> Q_partner =
      row_major_lane<C, C.B_r>(ptx::smem_address(Q_tile), partner_column, d_column, lane);
  const LdmatrixLane<C, C.B_r> dO_partner =
      row_major_lane<C, C.B_r>(ptx::smem_address(dO_tile), partner_column, d_column, lane);
  const LdmatrixLane<C, C.B_c> P_partner =
      row_major_lane<C, C.B_c>(ptx::smem_address(P_tile), key_row, partner_column, lane);
  const LdmatrixLane<C, C.B_c> dS_partner =
      row_major_lane<C, C.B_c>(ptx::smem_address(dS_tile), key_row, partner_column, lane);
  const LdmatrixLane<C, C.B_c> dS_paired =
      paired_lane<C, C.B_c>(ptx::smem_address(dS_tile), 0, query_column, lane);

  // This CTA's (sample, head) sequence in each tensor.
  const int kv_block = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.y);
  const int sample = static_cast<int>(blockIdx.z);
  const int kv_start = kv_block * C.B_c;
  const std::int64_t q_offset = sample * args.batch_stride + head * args.head_stride;
  const std::int64_t kv_offset = sample * args.kv_batch_stride + head * args.kv_head_stride;
  const Element* const Q_sequence = static_cast<const Element*>(args.Q) + q_offset;
  const Element* const dO_sequence = static_cast<const Element*>(args.dO) + q_offset;
  const Element* const K_block =
      static_cast<const Element*>(args.K) + kv_offset + kv_start * args.kv_seq_stride;
  const Element* const V_block =
      static_cast<const Element*>(args.V) + kv_offset + kv_start * args.kv_seq_stride;
  const WorkspaceLayout workspace = Workspace<C>::layout(args);
  const std::int64_t sequence = static_cast<std::int64_t>(sample) * args.n_heads + head;
  float* const dq_accumulator = workspace.dq_accumulator + sequence * args.seq_len * C.d_head;
  const float* const lse_sequence = workspace.row_lse2 + sequence * workspace.padded_len;
  const float* const row_d_sequence = workspace.row_d + sequence * workspace.padded_len;
  const int kv_rows = args.seq_len - kv_start;  // valid rows of the KV block (may exceed B_c)

  // Causal: the query blocks entirely above the diagonal (every query before the block's first
  // key) are skipped; only blocks that reach past it apply the element mask.
  const int n_q_blocks = (args.seq_len + C.B_r - 1) / C.B_r;
  const int first_q_block = args.causal ? kv_start / C.B_r : 0;

  // Query block `q_block` into stage `stage` (Q, dO, L·log2(e), D), not committed.
  const CopyLane<C> copy_lane(tid);
  auto copy_query_block = [&](int q_block, int stage) {
    const int q_start = q_block * C.B_r;
    copy_block_to_smem<C, C.B_r>(Q_tile + stage * Sh::kStageElements,
                                 Q_sequence + q_start * args.seq_stride, args.seq_stride,
                                 args.seq_len - q_start, copy_lane);
    copy_block_to_smem<C, C.B_r>(dO_tile + stage * Sh::kStageElements,
                                 dO_sequence + q_start * args.seq_stride, args.seq_stride,
                                 args.seq_len - q_start, copy_lane);
    copy_vector_to_smem(lse_tile + stage * kVectorStageFloats, lse_sequence + q_start, C.B_r, 0,
                        tid);
    copy_vector_to_smem(row_d_tile + stage * kVectorStageFloats, row_d_sequence + q_start, C.B_r,
                        C.B_r / 4, tid);
  };

  // ---- Prologue: K_j and V_j, resident for the whole CTA, and the first query block --------
  copy_block_to_smem<C, C.B_c>(K_tile, K_block, args.kv_seq_stride, kv_rows, copy_lane);
  copy_block_to_smem<C, C.B_c>(V_tile, V_block, args.kv_seq_stride, kv_rows, copy_lane);
  copy_query_block(first_q_block, 0);
  commit_copies();

  Accumulators<Sh::kKeyMTiles, Sh::kGradientNTiles> dV;
  Accumulators<Sh::kKeyMTiles, Sh::kGradientNTiles> dK;
  zero(dV);
  zero(dK);

  // This thread's rows (keys) and columns (queries) of Sᵀ, for the mask.
  const int thread_key = kv_start + key_row + lane / 4;
  const int thread_query_column = query_column + 2 * (lane % 4);

  int stage = 0;
  for (int q_block = first_q_block; q_block < n_q_blocks; ++q_block, stage ^= 1) {
    const int q_start = q_block * C.B_r;

    // ---- This block's stage has landed; the next block loads into the other stage -----------
    // The barrier also means every warp is done with the previous block: with its stage (now
    // free for the next block), and with P and dS.
    wait_for_copies<0>();
    __syncthreads();
    if (q_block + 1 < n_q_blocks) copy_query_block(q_block + 1, stage ^ 1);
    commit_copies();

    const std::uint32_t stage_bytes = stage * kStageBytes;
    const float* const lse_stage = lse_tile + stage * kVectorStageFloats;
    const float* const row_d_stage = row_d_tile + stage * kVectorStageFloats;

    // ---- Sᵀ = K·Qᵀ, then P = exp(S / sqrt(d) - L), rounded to 16 bits ----------------------
    // The diagonal blocks mask key > query; a KV block past the sequence's end masks its
    // zero-filled keys (exp(0 - L) could overflow where L < -88, and inf · 0 in dQ is NaN); the
    // other blocks have no masked element.
    const bool diagonal = args.causal && q_start < kv_start + C.B_c - 1;
    const bool masked_block = diagonal || kv_rows < C.B_c;
    AFragments<Sh::kKeyMTiles, Sh::kHalfQuerySlices> P;
    {
      Accumulators<Sh::kKeyMTiles, Sh::kScoreNTiles> S;
      zero(S);
      compute_transposed_scores<C>(S, K_rows, Q_paired.shifted(stage_bytes));
      // Templated on whether the block masks anything, so the blocks that do not (all but the
      // diagonal ones and a partial last KV block) carry no per-element mask code.
      auto probabilities = [&](auto masked) {
        constexpr bool kMasked = decltype(masked)::value;
#pragma unroll
        for (int n = 0; n < Sh::kScoreNTiles; ++n) {
          const int column = thread_query_column + 8 * n;
          const float2 lse2 = *reinterpret_cast<const float2*>(lse_stage + column);
#pragma unroll
          for (int m = 0; m < Sh::kKeyMTiles; ++m) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              float p =
                  ptx::exp2_approx(S[m][n][i] * Sh::kScaleLog2 - (i % 2 == 0 ? lse2.x : lse2.y));
              if constexpr (kMasked) {
                const int key = thread_key + 16 * m + 8 * (i / 2);
                if (key >= args.seq_len || (diagonal && key > q_start + column + i % 2)) p = 0.0f;
              }
              S[m][n][i] = p;
            }
          }
        }
      };
      if (masked_block)
        probabilities(std::true_type{});
      else
        probabilities(std::false_type{});
      // Rounded once, here: the A operand of dV += Pᵀ·dO and the P of dS = P ∘ (dP - D) are the
      // same 16-bit values (as in the low-precision reference), and P lives in 16 registers
      // instead of 32 while dPᵀ is computed.
      convert_to_A_fragments<C.dtype>(P, S);
    }

    // ---- dPᵀ = V·dOᵀ, then dS = P ∘ (dP - D), rounded to 16 bits -------------------------
    AFragments<Sh::kKeyMTiles, Sh::kHalfQuerySlices> dS;
    {
      Accumulators<Sh::kKeyMTiles, Sh::kScoreNTiles> dP;
      zero(dP);
      compute_transposed_scores<C>(dP, V_rows, dO_paired.shifted(stage_bytes));
#pragma unroll
      for (int n = 0; n < Sh::kScoreNTiles; ++n) {
        const float2 row_d =
            *reinterpret_cast<const float2*>(row_d_stage + thread_query_column + 8 * n);
#pragma unroll
        for (int m = 0; m < Sh::kKeyMTiles; ++m) {
#pragma unroll
          for (int i = 0; i < 4; i += 2) {
            const float2 p = ptx::unpack_pair<C.dtype>(A_pair_of(P, m, n, i));
            dP[m][n][i] = p.x * (dP[m][n][i] - row_d.x);
            dP[m][n][i + 1] = p.y * (dP[m][n][i + 1] - row_d.y);
          }
        }
      }
      convert_to_A_fragments<C.dtype>(dS, dP);
    }

    // ---- P and dS to shared memory for the pair partner and for dQ (a row per key) ---------
    store_A_fragments<C, C.B_c>(P_tile, key_row, query_column, P, lane);
    store_A_fragments<C, C.B_c>(dS_tile, key_row, query_column, dS, lane);

    // ---- dV += Pᵀ·dO and dK += dSᵀ·Q: the warp's own queries from its registers ------------
    // (before the barrier: they need nothing another warp writes)
    accumulate_gradient_from_registers<C>(dV, P, dO_own.shifted(stage_bytes));
    accumulate_gradient_from_registers<C>(dK, dS, Q_own.shifted(stage_bytes));
    __syncthreads();  // the partner's half of P and dS, and all of dS for dQ

    // ---- ... and the partner's queries from shared memory ----------------------------------
    accumulate_gradient_from_smem<C, 0, Sh::kHalfQuerySlices>(dV, P_partner,
                                                              dO_partner.shifted(stage_bytes));
    accumulate_gradient_from_smem<C, 0, Sh::kHalfQuerySlices>(dK, dS_partner,
                                                              Q_partner.shifted(stage_bytes));

    // ---- dQ += dS·K, added to the fp32 accumulator with vector reductions --------------------
    const int dq_first_row = q_start + query_column + lane / 4;
    auto dq_chunk = [&](auto chunk) {
      constexpr int kChunk = decltype(chunk)::value;
      Accumulators<Sh::kDqMTiles, Sh::kDqChunkNTiles> dQ;
      zero(dQ);
      compute_dq_chunk<C, kChunk>(dQ, dS_paired, K_columns);
      // Rows past the sequence's end are skipped; a whole query block needs no check.
      auto add = [&](auto checked) {
        constexpr bool kChecked = decltype(checked)::value;
#pragma unroll
        for (int m = 0; m < Sh::kDqMTiles; ++m) {
#pragma unroll
          for (int half_row = 0; half_row < 2; ++half_row) {
            const int row = dq_first_row + 16 * m + 8 * half_row;
            if (kChecked && row >= args.seq_len) continue;
            float* const target = dq_accumulator + static_cast<std::int64_t>(row) * C.d_head +
                                  dq_column + kChunk * Sh::kDqChunkColumns + 2 * (lane % 4);
#pragma unroll
            for (int n = 0; n < Sh::kDqChunkNTiles; ++n)
              ptx::red_add_v2_f32(target + 8 * n, dQ[m][n][2 * half_row],
                                  dQ[m][n][2 * half_row + 1]);
          }
        }
      };
      if (q_start + C.B_r > args.seq_len)
        add(std::true_type{});
      else
        add(std::false_type{});
    };
    [&]<int... kChunks>(std::integer_sequence<int, kChunks...>) {
      (dq_chunk(std::integral_constant<int, kChunks>{}), ...);
    }
    (std::make_integer_sequence<int, Sh::kDqChunks>{});
  }

  // ---- Epilogue: dK · scale and dV through K's and V's tiles, then coalesced stores ---------
  __syncthreads();  // every warp is done reading K (dQ) and V
  store_accumulators<C, C.B_c>(K_tile, key_row, d_column, dK, lane, Sh::kScale);
  store_accumulators<C, C.B_c>(V_tile, key_row, d_column, dV, lane);
  __syncthreads();
  Element* const dK_block =
      static_cast<Element*>(args.dK) + kv_offset + kv_start * args.kv_seq_stride;
  Element* const dV_block =
      static_cast<Element*>(args.dV) + kv_offset + kv_start * args.kv_seq_stride;
  copy_block_to_gmem<C, C.B_c>(dK_block, args.kv_seq_stride, kv_rows, K_tile, copy_lane);
  copy_block_to_gmem<C, C.B_c>(dV_block, args.kv_seq_stride, kv_rows, V_tile, copy_lane);
}

// ---- Launch --------------------------------------------------------------------------------

template <KernelConfig C>
std::size_t backward_workspace_bytes(const BackwardArgs& args) {
  return Workspace<C>::bytes(args);
}

// The three kernels in stream order. B2 runs multi-head attention only (n_kv_heads == n_heads);
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
  const int padded_len = Workspace<C>::padded_len(args);
  const auto row_grid = [&](int rows) {
    return dim3(static_cast<unsigned>((rows + RowKernelShape<C>::kRowsPerCta - 1) /
                                      RowKernelShape<C>::kRowsPerCta),
                static_cast<unsigned>(args.n_heads), static_cast<unsigned>(args.batch));
  };
  backward_preprocess_kernel<StaticConfig<C>>
      <<<row_grid(padded_len), kRowKernelThreads, 0, stream>>>(args);
  if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  const dim3 grid(static_cast<unsigned>((args.seq_len + C.B_c - 1) / C.B_c),
                  static_cast<unsigned>(args.n_heads), static_cast<unsigned>(args.batch));
  kMain<<<grid, Sh::kThreads, Sh::kSmemBytes, stream>>>(args);
  if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  backward_postprocess_kernel<StaticConfig<C>>
      <<<row_grid(args.seq_len), kRowKernelThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

// B2 runs any head count and sequence length on any sm_80+ device and applies the causal mask on
// request, as its descriptor declares. The entry's attributes are the main kernel's.
template <KernelConfig C>
void register_kernel(KernelRegistry& registry, int step) {
  static_assert(is_statically_valid(C, Pass::backward),
                "invalid KernelConfig (see static_config_violation)");
  KernelEntry entry = make_backward_kernel_entry<C>(
      step, &launch_backward<C>, &backward_workspace_bytes<C>,
      reinterpret_cast<const void*>(&flash_backward_kernel<StaticConfig<C>>), Shape<C>::kSmemBytes,
      Shape<C>::kThreads);
  entry.supports_causal = versions::kStepB2.causal;
  registry.add(std::move(entry));
}

}  // namespace flashscope::b02
