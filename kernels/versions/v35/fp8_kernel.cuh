// Flash Attention forward, step 28's FP8 path (docs/versions/28.md, docs/spec/fp8-track.md §4.1):
// Q, K and V are e4m3 with fp32 descales per (sample, head); O is bf16. Step 27's kernel
// (persistent, warp-specialized, ping-pong consumers, packed grouped-query tiles, the paired
// causal schedule) with:
//
//  * both GEMMs on `wgmma ... .e4m3.e4m3` (K = 32 per instruction): Q·Kᵀ with Q and K from SMEM as
//    before (both K-major), P·V with P from registers and Vᵀ from SMEM;
//  * V transposed in SMEM by the producer warpgroup's warps 1–3 after its TMA load
//    (fp8_transpose.cuh), into a Vᵀ ring of its own, since 8-bit wgmma has no transpose bit;
//  * P rounded to e4m3 in the registers (cvt.rn.satfinite.e4m3x2, byte packing) into the 8-bit
//    A fragment, the key order matched by the transpose instead of shuffles;
//  * P scaled by 2^8 before the rounding (exp2 of x + 8), so probabilities use e4m3's normal range;
//    the row sum carries the same factor, so O / l undoes it;
//  * the Q and K descales folded into the softmax scale (one per row: a packed tile's rows belong
//    to different query heads) and V's into the epilogue's 1 / l;
//  * step 27's conditional rescaling with a threshold of 0: a row's maximum is always current, so
//    P <= 2^8 fits e4m3's 448 (a stale maximum would let P·2^8 reach 2^16 and saturate). The warp
//    still skips the rescale of O when none of its rows' maxima moved.
//
// Step 30: the causal query grid aligned to the sequence's end (Packing::first_position), on this
// path as on the 16-bit one: every role (TMA, transpose, consumers) takes a tile's first position
// from it, and the epilogue stores no row before position 0.
//
// Step 31 (docs/versions/31.md, fp8-track.md §4.2): block descales, one per block of
// ForwardArgs::q_descale_rows query positions and one per block of kv_descale_rows keys (a whole
// number of KV tiles), instead of one per (sample, head). Where each enters, at no per-element
// cost:
//  * Q's, per row: each row already has a scale of its own (packed rows belong to different heads),
//    so its block's descale is looked up by the row's position instead of its head;
//  * K's, per KV tile, in the exp2's multiplier: a positive factor commutes with the maximum, so
//    the tile's raw maximum is scaled once a row and the running maximum is kept in descaled units;
//    P = exp2(S · scale · k_j + bias) is still one FFMA an element;
//  * V's, per KV tile, in P: O = v_max · Σ_j (v_j / v_max) · P_j · V_j with v_max the head's
//    largest V descale, and log2(v_j / v_max) <= 0 is added to the exp2's bias, so P · 2^8 still
//    fits e4m3. The tile's row sum is divided by the same ratio (two multiplies a thread), and the
//    epilogue multiplies by v_max where step 30 multiplied by the head's descale. Scaling the O
//    accumulator by v_prev / v_j instead would cost d_head / 2 multiplies a thread every tile,
//    where step 27's rescale is skipped on most tiles.
// With per-(sample, head) descales (rows = seq_len) every ratio is 1 and this is step 30.
//
// Step 33 (docs/versions/33.md): a shorter path from a landed V tile to its published Vᵀ tile.
// The producer warpgroup keeps 40 registers where regs_240 left it 24 (Fp8Shape's register split:
// the consumers take 232), and the transposing warps move two items at once with the swizzle
// applied by XOR from per-lane offsets (fp8_transpose.cuh). The consumers are step 32's.
#pragma once

#include <cuda_bf16.h>

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
#include "kernels/common/wgmma_descriptor.hpp"
#include "kernels/common/wgmma_ops.cuh"
#include "kernels/versions/v35/block_gemms.cuh"
#include "kernels/versions/v35/causal_mask.cuh"
#include "kernels/versions/v35/fp8_layout.cuh"
#include "kernels/versions/v35/fp8_transpose.cuh"
#include "kernels/versions/v35/fragments.cuh"
#include "kernels/versions/v35/gmem_smem_copy.cuh"
#include "kernels/versions/v35/online_softmax.cuh"
#include "kernels/versions/v35/row_reduce.cuh"
#include "kernels/versions/v35/packing.cuh"

namespace flashscope::v35 {

// ---- P into the 8-bit A fragment ---------------------------------------------------------------

// Four floats rounded to e4m3 (nearest, ties to even, saturating at ±448) in one register, x0 in
// the lowest byte. cvt's e4m3x2 form puts its first source in the upper byte.
__device__ __forceinline__ std::uint32_t pack_e4m3x4(float x0, float x1, float x2, float x3) {
  std::uint32_t packed;
  asm("{\n"
      ".reg .b16 low, high;\n"
      "cvt.rn.satfinite.e4m3x2.f32 low, %2, %1;\n"
      "cvt.rn.satfinite.e4m3x2.f32 high, %4, %3;\n"
      "mov.b32 %0, {low, high};\n"
      "}\n"
      : "=r"(packed)
      : "f"(x0), "f"(x1), "f"(x2), "f"(x3));
  return packed;
}

// P (probabilities x 2^8 in S's accumulator layout) as the A operand of the 32-key steps of P·V.
// Lane (g, t) holds keys 2t, 2t + 1 of every 8-key fragment; the 8-bit A fragment wants k
// positions 4t .. 4t + 3 of rows g (register 0) and g + 8 (register 1), and 16 + 4t .. of the same
// rows (registers 2, 3). Vᵀ stores, at those positions, exactly keys 2t, 2t + 1 of fragments
// 4j, 4j + 1 (and 4j + 2, 4j + 3), so no value leaves its lane (fp8_transpose.cuh).
template <int kScoreNTiles>
__device__ __forceinline__ void convert_to_fp8_A_fragments(AFragments<1, kScoreNTiles / 4>& P,
                                                           const Accumulators<1, kScoreNTiles>& S) {
#pragma unroll
  for (int step = 0; step < kScoreNTiles / 4; ++step) {
    const float(&f0)[4] = S[0][4 * step];
    const float(&f1)[4] = S[0][4 * step + 1];
    const float(&f2)[4] = S[0][4 * step + 2];
    const float(&f3)[4] = S[0][4 * step + 3];
    P[0][step][0] = pack_e4m3x4(f0[0], f0[1], f1[0], f1[1]);
    P[0][step][1] = pack_e4m3x4(f0[2], f0[3], f1[2], f1[3]);
    P[0][step][2] = pack_e4m3x4(f2[0], f2[1], f3[0], f3[1]);
    P[0][step][3] = pack_e4m3x4(f2[2], f2[3], f3[2], f3[3]);
  }
}

// ---- The GEMMs ---------------------------------------------------------------------------------

struct Fp8OperandDescriptors {
  std::uint64_t Q;   // this consumer's 64 rows of the Q tile: A, K-major
  std::uint64_t K;   // K tile of stage 0: B of Q·Kᵀ, K-major
  std::uint64_t Vt;  // Vᵀ tile of stage 0: B of P·V, K-major (a row is one column of V)
};

template <KernelConfig C>
__device__ __forceinline__ Fp8OperandDescriptors make_fp8_descriptors(std::uint32_t Q_tile,
                                                                      std::uint32_t K_tile,
                                                                      std::uint32_t Vt_tile,
                                                                      int consumer) {
  constexpr std::uint32_t kUnusedLeading = 16;  // K-major swizzled: ignored, "assumed 1"
  constexpr std::uint32_t kGroupStride = wgmma::kSwizzle128AtomBytes;  // 8 rows of 128 bytes
  const std::uint32_t Q_rows = Q_tile + consumer * kWarpgroupRows * Fp8Shape<C>::kRowBytes;
  return {wgmma::make_descriptor(Q_rows, kUnusedLeading, kGroupStride),
          wgmma::make_descriptor(K_tile, kUnusedLeading, kGroupStride),
          wgmma::make_descriptor(Vt_tile, kUnusedLeading, kGroupStride)};
}

// S = Q·Kᵀ for the consumer's 64 rows: d / 32 wgmmas of K = 32, a step 32 bytes along the swizzled
// rows (k_major_step_offset: four steps a 128-byte sub-tile), the first overwriting S.
template <KernelConfig C>
__device__ __forceinline__ void issue_fp8_scores(Accumulators<1, Fp8Shape<C>::kScoreNTiles>& S,
                                                 const Fp8OperandDescriptors& descriptors,
                                                 int stage) {
  using Sh = Fp8Shape<C>;
  const std::uint64_t K = wgmma::advance_descriptor(descriptors.K, stage * Sh::kKVTileBytes);
  ptx::fence_operands(S[0]);
  ptx::wgmma_fence();
#pragma unroll
  for (int step = 0; step < Sh::kQKSteps; ++step) {
    ptx::WgmmaOp<DType::E4M3, C.B_c>::template ss<0>(
        S[0], wgmma::advance_descriptor(descriptors.Q, k_major_step_offset<C.B_r>(step)),
        wgmma::advance_descriptor(K, k_major_step_offset<C.B_c>(step)), step > 0);
  }
  ptx::wgmma_commit_group();
}

// O += P·V: B_c / 32 wgmmas of K = 32 with P's step from registers and Vᵀ read K-major, a step 32
// bytes along Vᵀ's rows.
template <KernelConfig C>
__device__ __forceinline__ void issue_fp8_output(Accumulators<1, Fp8Shape<C>::kOutputNTiles>& O,
                                                 const AFragments<1, Fp8Shape<C>::kPVSteps>& P,
                                                 const Fp8OperandDescriptors& descriptors,
                                                 int stage) {
  using Sh = Fp8Shape<C>;
  const std::uint64_t Vt = wgmma::advance_descriptor(descriptors.Vt, stage * Sh::kVtTileBytes);
  ptx::fence_operands(O[0]);
  ptx::wgmma_fence();
#pragma unroll
  for (int step = 0; step < Sh::kPVSteps; ++step) {
    ptx::WgmmaOp<DType::E4M3, Sh::kDHead>::template rs<0>(
        O[0], P[0][step], wgmma::advance_descriptor(Vt, step * 32), true);
  }
  ptx::wgmma_commit_group();
}

// ---- Block descales (step 31) -------------------------------------------------------------------

// What the softmax needs of one KV tile's descales: K's, and V's as the log2 of its ratio to the
// head's largest V descale (<= 0) and the inverse of that ratio.
struct TileDescales {
  float k;
  float v_ratio_log2;
  float v_ratio_inverse;
};

// The descales of one (sample, KV head): K's and V's blocks of kv_descale_rows keys (a whole
// number of KV tiles, launch validation), and the largest V descale, which the epilogue applies.
template <KernelConfig C>
class KVBlockDescales {
 public:
  __device__ __forceinline__ KVBlockDescales(const ForwardArgs& args, int kv_head, int lane)
      : rows_(args.kv_descale_rows) {
    const int blocks = (args.seq_len + rows_ - 1) / rows_;
    k_ = args.k_descale + static_cast<std::int64_t>(kv_head) * blocks;
    v_ = args.v_descale + static_cast<std::int64_t>(kv_head) * blocks;
    // v_max over every block of the head (those a causal row skips too: an upper bound is all
    // the ratios need), each lane a stride of the blocks, then the warp's maximum.
    float largest = 0.0f;
    for (int block = lane; block < blocks; block += 32)
      largest = fmaxf(largest, __ldg(v_ + block));
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      largest = fmaxf(largest, __shfl_xor_sync(0xffffffffu, largest, offset));
    v_max_ = largest;
    v_max_log2_ = __log2f(largest);
  }

  // The raw descales of KV tile `kv_block` (B_c keys from kv_block · B_c), loaded early: the
  // softmax needs them only once the tile's Q·Kᵀ is done.
  struct Raw {
    float k, v;
  };
  __device__ __forceinline__ Raw load(int kv_block) const {
    const int block = kv_block * C.B_c / rows_;
    return {__ldg(k_ + block), __ldg(v_ + block)};
  }
  __device__ __forceinline__ TileDescales of(const Raw& raw) const {
    return {raw.k, __log2f(raw.v) - v_max_log2_, __fdividef(v_max_, raw.v)};
  }
  __device__ __forceinline__ float v_max() const {
    return v_max_;
  }

 private:
  int rows_;
  const float* k_;
  const float* v_;
  float v_max_;
  float v_max_log2_;
};

// ---- Online softmax with descales --------------------------------------------------------------

// Step 27's OnlineSoftmax with a scale per row (the Q descale of the row's block times
// log2(e) / sqrt(d)), P scaled by 2^8, and the rescale threshold 0 (see the top). Step 31: each KV
// tile's K descale multiplies the scale and its V descale ratio (v_j / v_max) multiplies P; the
// running maximum is in units of the K-descaled scores.
template <KernelConfig C>
class Fp8OnlineSoftmax {
  using Sh = Fp8Shape<C>;

 public:
  using RescaleFactors = float[1][2];

  __device__ __forceinline__ explicit Fp8OnlineSoftmax(const float (&scale_log2)[2]) {
    scale_[0] = scale_log2[0];
    scale_[1] = scale_log2[1];
  }

  // `tile`: the KV tile's K descale and its V descale ratio (TileDescales).
  template <bool kIsFirstBlock>
  __device__ __forceinline__ bool update_scores(Accumulators<1, Sh::kScoreNTiles>& S,
                                                RescaleFactors& factors, const TileDescales& tile) {
    float new_maxima[2];
    bool moves[2];
    float block_sums[2];
    bool any_moves = false;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int first = 2 * half;
      // Step 35: the thread's 2 · n-tiles scores of the row combined as a tree (row_reduce.cuh),
      // not as one chain of dependent FMNMX.
      float scores[2 * Sh::kScoreNTiles];
#pragma unroll
      for (int n = 0; n < Sh::kScoreNTiles; ++n) {
        scores[2 * n] = S[0][n][first];
        scores[2 * n + 1] = S[0][n][first + 1];
      }
      const float block_max = tree_reduce(scores, MaxOf{});
      // k_j > 0 commutes with the maximum: the tile's maximum in descaled units is one multiply
      // (a masked row's -inf stays -inf).
      const float tile_max = quad_max(block_max) * tile.k;
      const float new_max = kIsFirstBlock ? tile_max : fmaxf(row_max_[half], tile_max);
      if constexpr (!kIsFirstBlock) {
        moves[half] = new_max > row_max_[half];
        any_moves = any_moves || moves[half];
      }
      // exp2((S · k_j - m) · scale + 8 + log2(v_j / v_max)) = 2^8 · (v_j / v_max) · P: still one
      // FFMA and the ex2 an element.
      const float multiplier = scale_[half] * tile.k;
      const float bias = Sh::kProbabilityScaleLog2 + tile.v_ratio_log2 - new_max * scale_[half];
#pragma unroll
      for (int n = 0; n < Sh::kScoreNTiles; ++n) {
#pragma unroll
        for (int i = first; i < first + 2; ++i)
          S[0][n][i] = ptx::exp2_approx(fmaf(S[0][n][i], multiplier, bias));
      }
      // Step 35 (variant): the row sum stays step 34's chain, whose FADDs ptxas places between the
      // MUFU.EX2s as their results arrive; with a sum tree it grouped them after the whole stream.
      float row_sum = S[0][0][first] + S[0][0][first + 1];
#pragma unroll
      for (int n = 1; n < Sh::kScoreNTiles; ++n)
        row_sum += S[0][n][first] + S[0][n][first + 1];
      // The row sum is of the probabilities alone: the V ratio is undone.
      row_sum *= tile.v_ratio_inverse;
      if constexpr (kIsFirstBlock) {
        row_max_[half] = new_max;
        row_sum_[half] = row_sum;
      } else {
        new_maxima[half] = new_max;
        block_sums[half] = row_sum;
      }
    }
    if constexpr (kIsFirstBlock) {
      return false;
    } else {
      const bool rescales = __any_sync(0xffffffffu, any_moves);
      if (rescales) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float rescale =
              moves[half] ? ptx::exp2_approx((row_max_[half] - new_maxima[half]) * scale_[half])
                          : 1.0f;
          row_sum_[half] *= rescale;
          factors[0][half] = rescale;
        }
      }
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        row_max_[half] = new_maxima[half];
        row_sum_[half] += block_sums[half];
      }
      return rescales;
    }
  }

  __device__ __forceinline__ void rescale(Accumulators<1, Sh::kOutputNTiles>& O,
                                          const RescaleFactors& factors) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
#pragma unroll
      for (int n = 0; n < Sh::kOutputNTiles; ++n) {
        O[0][n][2 * half] *= factors[0][half];
        O[0][n][2 * half + 1] *= factors[0][half];
      }
    }
  }

  // O · v_descale / l: the 2^8 of P is in both O and l, V's descale enters here (step 31: the
  // head's largest V descale, v_max; each tile's ratio to it is in P).
  __device__ __forceinline__ void normalize(Accumulators<1, Sh::kOutputNTiles>& O,
                                            float v_descale) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      row_sum_[half] = quad_sum(row_sum_[half]);
      const float factor = v_descale / row_sum_[half];
#pragma unroll
      for (int n = 0; n < Sh::kOutputNTiles; ++n) {
        O[0][n][2 * half] *= factor;
        O[0][n][2 * half + 1] *= factor;
      }
    }
  }

  // L = ln sum_j exp(s_j) with s the descaled scores / sqrt(d): the row sum holds 2^8 · l (the V
  // ratios undone), the maximum is in K-descaled units.
  __device__ __forceinline__ float log_sum_exp(int half) const {
    constexpr float kLn2 = 0.6931471805599453f;
    return (row_max_[half] * scale_[half] + __log2f(row_sum_[half]) - Sh::kProbabilityScaleLog2) *
           kLn2;
  }

 private:
  float scale_[2];
  float row_max_[2];
  float row_sum_[2];
};

// ---- O to GMEM in bf16 -------------------------------------------------------------------------

// store_O_to_global's quad transpose and 16-byte stores, for the bf16 O of e4m3 inputs.
template <KernelConfig C>
__device__ __forceinline__ void store_bf16_O_to_global(
    __nv_bfloat16* const (&rows)[2], const Accumulators<1, Fp8Shape<C>::kOutputNTiles>& O,
    int lane) {
  constexpr int kNTiles = Fp8Shape<C>::kOutputNTiles;
  static_assert(kNTiles % 4 == 0, "fragments are transposed in fours");
  const int t = lane % 4;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    __nv_bfloat16* const row = rows[half];
#pragma unroll
    for (int group = 0; group < kNTiles / 4; ++group) {
      std::uint32_t pairs[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float(&fragment)[4] = O[0][4 * group + j];
        pairs[j] = ptx::pack_pair<DType::BF16>(fragment[2 * half], fragment[2 * half + 1]);
      }
      transpose_quad(pairs, t);
      if (row != nullptr)
        *reinterpret_cast<uint4*>(row + 8 * (4 * group + t)) =
            make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
    }
  }
}

// One box per 128-column sub-tile (d_head = 64: one box whose upper half is zeros).
template <KernelConfig C, int kRows>
__device__ __forceinline__ void load_fp8_tile(std::uint32_t tile, const CUtensorMap* map,
                                              std::uint32_t full_barrier,
                                              const TileCoordinates& from) {
  using Sh = Fp8Shape<C>;
#pragma unroll
  for (int sub_tile = 0; sub_tile < Sh::kSubTiles; ++sub_tile) {
    ptx::tma_load_4d(tile + sub_tile * kRows * Sh::kRowBytes, map, full_barrier,
                     sub_tile * Sh::kRowBytes, from.head, from.first_row, from.sample);
  }
}

// ---- The kernel --------------------------------------------------------------------------------

template <typename StaticC>
__global__ void __launch_bounds__(Fp8Shape<StaticC::value>::kThreads, 1)
    flash_forward_fp8_kernel(const __grid_constant__ ForwardArgs args,
                             const __grid_constant__ AttentionTensorMaps maps) {
  constexpr KernelConfig C = StaticC::value;
  using Sh = Fp8Shape<C>;
  using KVState = pipeline::PipelineState<Sh::kStages>;
  using QState = pipeline::PipelineState<1>;

  extern __shared__ uint4 smem[];
  const std::uint32_t misalignment = ptx::smem_address(smem) % kHopperSmemAlignment;
  char* const tiles =
      reinterpret_cast<char*>(smem) + (kHopperSmemAlignment - misalignment) % kHopperSmemAlignment;
  const std::uint32_t base = ptx::smem_address(tiles);
  const std::uint32_t Q_address = base + Sh::kQTileOffset;
  const std::uint32_t K_address = base + Sh::kKTileOffset;    // stage 0
  const std::uint32_t V_address = base + Sh::kVTileOffset;    // stage 0
  const std::uint32_t Vt_address = base + Sh::kVtTileOffset;  // stage 0
  // Q: one slot, released by the consumer warps. K: released by the consumer warps after Q·Kᵀ.
  // V: filled by TMA, released by the transpose once read. Vᵀ: filled by the transpose, released
  // by the consumer warps after P·V.
  const pipeline::MbarrierPipeline<1> Q_ring(base + Sh::kBarrierOffsetBytes);
  const pipeline::MbarrierPipeline<Sh::kStages> K_ring(base + Sh::kKRingOffsetBytes);
  const pipeline::MbarrierPipeline<Sh::kStages> V_ring(base + Sh::kVRingOffsetBytes);
  const pipeline::MbarrierPipeline<Sh::kStages> Vt_ring(base + Sh::kVtRingOffsetBytes);

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int warpgroup = warp / kWarpgroupWarps;

  const Packing packing = Packing::of<C>(args);
  const bool causal = args.causal != 0;
  scheduling::PairedTileScheduler scheduler(
      scheduling::TileSpace{args.n_Q_blocks, args.n_kv_heads, args.batch}, causal,
      static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x));

  if (tid == 0) {
    ptx::prefetch_tensor_map(&maps.q);
    ptx::prefetch_tensor_map(&maps.k);
    ptx::prefetch_tensor_map(&maps.v);
    Q_ring.init(Sh::kConsumerWarps);
    K_ring.init(Sh::kConsumerWarps);
    V_ring.init(1);
    Vt_ring.init(Sh::kConsumerWarps);
    ptx::fence_barrier_init();
  }
  // Idle rows of a packed Q tile (g does not divide B_r) are zeroed once, as in step 26.
  if (packing.rows < C.B_r) {
    constexpr int kChunksPerRow = Sh::kRowBytes / 16;
    const int idle_chunks = (C.B_r - packing.rows) * kChunksPerRow;
    for (int chunk = tid; chunk < Sh::kSubTiles * idle_chunks; chunk += Sh::kThreads) {
      const int sub_tile = chunk / idle_chunks;
      const int row = packing.rows + chunk % idle_chunks / kChunksPerRow;
      uint4* const sub_tile_rows =
          reinterpret_cast<uint4*>(tiles + Sh::kQTileOffset + sub_tile * C.B_r * Sh::kRowBytes);
      sub_tile_rows[row * kChunksPerRow + chunk % kChunksPerRow] = make_uint4(0, 0, 0, 0);
    }
    ptx::fence_proxy_async_shared();
  }
  __syncthreads();

  if (warpgroup == 0) {
    ptx::setmaxnreg_dec<Sh::kProducerRegisters>();
    if (tid == 0) {
      // ---- TMA: Q, then K and V of each block, as in step 27 -----------------------------------
      QState q_state;
      KVState kv_state;
      const std::uint32_t Q_bytes =
          static_cast<std::uint32_t>(packing.rows) * Sh::kSubTiles * Sh::kRowBytes;
      for (; scheduler.has_tile(); scheduler.advance()) {
        const scheduling::AttentionTile tile = scheduler.tile();
        const int first_position = packing.first_position(tile.query_block, args.seq_len, causal);
        const CausalBlockRange range =
            kv_blocks_of<C>(first_position, packing.positions, args.n_KV_blocks, causal);
        const int last_kv_block = range.blocks - 1;
        Q_ring.producer_acquire(q_state);
        load_fp8_tile<C, C.B_r>(Q_address, &maps.q, Q_ring.producer_expect_bytes(q_state, Q_bytes),
                                {first_position, tile.head * packing.group, tile.sample});
        q_state.advance();
        for (int block = 0; block < range.blocks; ++block, kv_state.advance()) {
          const TileCoordinates from{(last_kv_block - block) * C.B_c, tile.head, tile.sample};
          const int slot_offset = kv_state.index * Sh::kKVTileBytes;
          K_ring.producer_acquire(kv_state);
          load_fp8_tile<C, C.B_c>(K_address + slot_offset, &maps.k,
                                  K_ring.producer_expect_bytes(kv_state, Sh::kKVTileBytes), from);
          V_ring.producer_acquire(kv_state);
          load_fp8_tile<C, C.B_c>(V_address + slot_offset, &maps.v,
                                  V_ring.producer_expect_bytes(kv_state, Sh::kKVTileBytes), from);
        }
      }
    } else if (warp >= 1) {
      // ---- Transpose: warps 1-3 turn each landed V tile into Vᵀ --------------------------------
      const int thread = tid - 32;
      KVState kv_state;
      for (; scheduler.has_tile(); scheduler.advance()) {
        const scheduling::AttentionTile tile = scheduler.tile();
        const int first_position = packing.first_position(tile.query_block, args.seq_len, causal);
        const CausalBlockRange range =
            kv_blocks_of<C>(first_position, packing.positions, args.n_KV_blocks, causal);
        for (int block = 0; block < range.blocks; ++block, kv_state.advance()) {
          V_ring.consumer_wait(kv_state);
          Vt_ring.producer_acquire(kv_state);
          transpose_V_tile<C>(V_address + kv_state.index * Sh::kKVTileBytes,
                              Vt_address + kv_state.index * Sh::kVtTileBytes, thread);
          // Each thread's generic stores are made visible to wgmma's async proxy, then all 96
          // threads meet before one of them publishes the tile and frees V's slot.
          ptx::fence_proxy_async_shared();
          ptx::named_barrier_sync(kTransposeBarrier, kTransposeThreads);
          if (thread == 0) {
            Vt_ring.producer_commit(kv_state);
            V_ring.consumer_release(kv_state);
          }
        }
      }
    }
  } else {
    // ---- Consumers
    // -------------------------------------------------------------------------------
    ptx::setmaxnreg_inc<Sh::kConsumerRegisters>();
    const int consumer = warpgroup - 1;
    const int warp_first_query_row = (warp - kWarpgroupWarps) * Sh::kWarpQueryRows;
    const PackedRows rows(packing, warp_first_query_row + lane / 4);
    const Fp8OperandDescriptors descriptors =
        make_fp8_descriptors<C>(Q_address, K_address, Vt_address, consumer);
    auto release = [lane](const auto& ring, const auto& state) {
      if (lane == 0) ring.consumer_release(state);
    };
    // Step 29: the turns go round the consumers as on the 16-bit path (kernel.cuh).
    constexpr int kConsumers = consumer_warpgroups(C);
    constexpr int kTurnBarrier = 3;
    constexpr int kTurnThreads = 2 * kWarpgroupWarps * 32;
    const bool goes_first = consumer == 0;
    auto begin_turn = [consumer] {
      ptx::named_barrier_sync(kTurnBarrier + consumer, kTurnThreads);
    };
    auto end_turn = [consumer] {
      ptx::named_barrier_arrive(kTurnBarrier + (consumer + 1) % kConsumers, kTurnThreads);
    };

    QState q_state;
    KVState kv_state;
    bool first_turn = true;
    for (; scheduler.has_tile(); scheduler.advance()) {
      const scheduling::AttentionTile tile = scheduler.tile();
      const int first_position = packing.first_position(tile.query_block, args.seq_len, causal);
      const CausalBlockRange range =
          kv_blocks_of<C>(first_position, packing.positions, args.n_KV_blocks, causal);
      const int row_positions[2] = {first_position + rows.position_offset[0],
                                    first_position + rows.position_offset[1]};
      int heads[2];
      float scale_log2[2];
      const int kv_head = tile.sample * args.n_kv_heads + tile.head;
      // Step 31: each row's Q descale is its block's (a row past seq_len, never stored, reads the
      // last block's); K's and V's come per KV tile (KVBlockDescales).
      const int q_descale_blocks = (args.seq_len + args.q_descale_rows - 1) / args.q_descale_rows;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        heads[half] = tile.head * packing.group + rows.head_offset[half];
        const int position = min(row_positions[half], args.seq_len - 1);
        scale_log2[half] =
            __ldg(args.q_descale +
                  (static_cast<std::int64_t>(tile.sample) * args.n_heads + heads[half]) *
                      q_descale_blocks +
                  position / args.q_descale_rows) *
            Sh::kSoftmaxScaleLog2;
      }
      const KVBlockDescales<C> kv_descales(args, kv_head, lane);
      // The producer loads the KV tiles from the last one down (kv_blocks_of's order).
      typename KVBlockDescales<C>::Raw next_descales = kv_descales.load(range.blocks - 1);
      Accumulators<1, Sh::kOutputNTiles> O;
      Accumulators<1, Sh::kScoreNTiles> S;
      AFragments<1, Sh::kPVSteps> P;
      Fp8OnlineSoftmax<C> softmax(scale_log2);
      typename Fp8OnlineSoftmax<C>::RescaleFactors factors;
      Q_ring.consumer_wait(q_state);

      if (!(goes_first && first_turn)) begin_turn();
      first_turn = false;
      K_ring.consumer_wait(kv_state);
      issue_fp8_scores<C>(S, descriptors, kv_state.index);
      end_turn();
      wait_for_gemms<0>(S[0]);
      release(K_ring, kv_state);
      zero(O);
      if (range.masked_blocks > 0) apply_causal_mask<C>(S, row_positions, range.blocks - 1, lane);
      softmax.template update_scores<true>(S, factors, kv_descales.of(next_descales));
      convert_to_fp8_A_fragments(P, S);
      KVState previous = kv_state;
      kv_state.advance();

      auto kv_turn = [&](int block, auto masked) {
        next_descales = kv_descales.load(range.blocks - 1 - block);
        begin_turn();
        K_ring.consumer_wait(kv_state);
        issue_fp8_scores<C>(S, descriptors, kv_state.index);
        Vt_ring.consumer_wait(previous);
        issue_fp8_output<C>(O, P, descriptors, previous.index);
        end_turn();
        wait_for_gemms<1>(S[0]);
        release(K_ring, kv_state);
        if constexpr (decltype(masked)::value)
          apply_causal_mask<C>(S, row_positions, range.blocks - 1 - block, lane);
        const bool rescales =
            softmax.template update_scores<false>(S, factors, kv_descales.of(next_descales));
        wait_for_gemms<0>(O[0]);
        for (auto& step : P[0])
          for (std::uint32_t& bytes : step)
            ptx::fence_operand(bytes);
        release(Vt_ring, previous);
        if (rescales) softmax.rescale(O, factors);
        convert_to_fp8_A_fragments(P, S);
        previous = kv_state;
        kv_state.advance();
      };
      int block = 1;
      for (; block < range.masked_blocks; ++block)
        kv_turn(block, std::true_type{});
      for (; block < range.blocks; ++block)
        kv_turn(block, std::false_type{});
      release(Q_ring, q_state);
      q_state.advance();

      begin_turn();
      Vt_ring.consumer_wait(previous);
      issue_fp8_output<C>(O, P, descriptors, previous.index);
      end_turn();
      wait_for_gemms<0>(O[0]);
      release(Vt_ring, previous);

      // ---- Epilogue: O · v_descale / l in bf16, and the log-sum-exp
      // ------------------------------
      softmax.normalize(O, kv_descales.v_max());
      __nv_bfloat16* row_addresses[2];
      bool stored[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        stored[half] =
            rows.used[half] && row_positions[half] >= 0 && row_positions[half] < args.seq_len;
        row_addresses[half] =
            stored[half]
                ? static_cast<__nv_bfloat16*>(args.O) + tile.sample * args.batch_stride +
                      row_positions[half] * args.seq_stride + heads[half] * args.head_stride
                : nullptr;
      }
      store_bf16_O_to_global<C>(row_addresses, O, lane);
      if (args.softmax_lse != nullptr) {
        const int t = lane % 4;
        const bool second = t == 1;
        const float lse = second ? softmax.log_sum_exp(1) : softmax.log_sum_exp(0);
        const int head = second ? heads[1] : heads[0];
        const int position = second ? row_positions[1] : row_positions[0];
        if (t < 2 && (second ? stored[1] : stored[0]))
          args.softmax_lse[(static_cast<std::int64_t>(tile.sample) * args.n_heads + head) *
                               args.seq_len +
                           position] = lse;
      }
    }
    if (goes_first) begin_turn();
  }
}

// Step 27's persistent launch with the e4m3 tensor maps (boxes of 128 one-byte columns) and the
// FP8 path's shared memory.
template <KernelConfig C>
cudaError_t launch_persistent_fp8(const ForwardArgs& args, cudaStream_t stream) {
  constexpr TmaKernelFunction kKernel = &flash_forward_fp8_kernel<StaticConfig<C>>;
  constexpr int kSmemBytes = Fp8Shape<C>::kSmemBytes;
  static const cudaError_t opt_in =
      cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  if (opt_in != cudaSuccess) return opt_in;
  if (args.n_kv_heads < 1 || args.n_heads % args.n_kv_heads != 0 ||
      args.n_heads / args.n_kv_heads > C.B_r || args.q_descale == nullptr ||
      args.k_descale == nullptr || args.v_descale == nullptr || args.q_descale_rows < 1 ||
      args.kv_descale_rows < 1 || args.kv_descale_rows % C.B_c != 0)
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

}  // namespace flashscope::v35
