// Compile-time shape of one instantiation of backward step B2, its warp roles, its shared-memory
// tiles and its workspace (backward-track.md §4, B2).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "kernels/common/backward_args.hpp"
#include "kernels/common/config.hpp"

namespace flashscope::b02 {

template <DType kDType>
struct ElementOf;
template <>
struct ElementOf<DType::FP16> {
  using type = __half;
};
template <>
struct ElementOf<DType::BF16> {
  using type = __nv_bfloat16;
};

// Newton iteration, so the softmax scale 1/sqrt(d_head) is an immediate in the kernel.
constexpr double constexpr_sqrt(double x) {
  double root = x > 1.0 ? x : 1.0;
  for (int iteration = 0; iteration < 64; ++iteration)
    root = 0.5 * (root + x / root);
  return root;
}

// What the backward's warp layout needs of a config, beyond static_config_violation; "" when it
// fits. The step's validation rules (step.hpp) repeat these with the config's values.
//  - The warps work in pairs on 32-key groups of the KV block: B_c = 16 · n_warps.
//  - A warp keeps dK and dV of its 32 keys x d_head / 2 columns in fp32 registers (d_head
//    registers a thread) and the transposed scores Sᵀ and dPᵀ of its 32 keys x B_r / 2 queries
//    (B_r registers): at most 192 at d_head 128 and B_r 64, which leaves room for fragments and
//    addresses under the 255-register ceiling. d_head = 256 alone would need 256.
//  - The query blocks have 64 rows: B_r = 128 doubles Sᵀ and dPᵀ, and B2 spilled there.
constexpr const char* backward_layout_violation(const KernelConfig& c) {
  if (is_hopper_config(c)) return "the backward Ampere steps need an Ampere config (stages = 0)";
  if (c.d_head != 64 && c.d_head != 128)
    return "d_head must be 64 or 128: a warp keeps dK and dV of 32 keys x d_head / 2 columns in "
           "fp32 registers (256 registers a thread at d_head = 256)";
  if (c.n_warps < 2 || c.n_warps % 2 != 0 || c.B_c != 16 * c.n_warps)
    return "B_c must be 16 x n_warps with n_warps even: warps work in pairs on 32-key groups";
  if (c.B_r != 64)
    return "B_r must be 64: Sᵀ and dPᵀ of a warp's 32 keys x 32 queries beside dK and dV";
  return "";
}

template <KernelConfig C>
struct Shape {
  static_assert(backward_layout_violation(C)[0] == '\0',
                "invalid backward config (see backward_layout_violation)");
  static_assert(C.swizzled && C.eager_load_blocks && C.mma_double_buffer_loads,
                "step B2's tiles are swizzled, its query blocks and fragment loads double-buffered "
                "(swizzled, eager, buffer)");

  using Element = typename ElementOf<C.dtype>::type;

  static constexpr int kDHead = C.d_head;
  static constexpr int kThreads = 32 * C.n_warps;

  // Block copies are CTA-cooperative: thread tid moves row tid / 8 and 16-byte chunk tid % 8 of
  // every kCopyRows-row x 64-column patch.
  static constexpr int kCopyRows = kThreads / 8;
  static_assert(C.B_r % kCopyRows == 0 && C.B_c % kCopyRows == 0,
                "B_r and B_c must be whole copy patches of 4 * n_warps rows");

  // ---- Warp roles (backward-track.md §4, B1) -------------------------------------------------
  // Warp w belongs to key group w / 2 (keys [32·(w/2), 32·(w/2) + 32) of the KV block) and is
  // half w % 2 of its pair. For Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ it owns its group's keys against its
  // half of the query block's rows; for dV and dK it owns its group's keys against its half of
  // the d_head columns; for dQ = dS·K its half of the query rows against the pair's share
  // (d_head / groups columns).
  static constexpr int kKeyGroups = C.n_warps / 2;
  static constexpr int kGroupKeys = 32;
  static constexpr int kKeyMTiles = kGroupKeys / 16;     // m-tiles of Sᵀ, dPᵀ, dV, dK
  static constexpr int kHalfQueries = C.B_r / 2;         // query columns of a warp's Sᵀ
  static constexpr int kScoreNTiles = kHalfQueries / 8;  // n-tiles of Sᵀ and dPᵀ
  static constexpr int kHalfColumns = kDHead / 2;        // d_head columns of a warp's dV, dK
  static constexpr int kGradientNTiles = kHalfColumns / 8;
  static constexpr int kDSlices = kDHead / 16;                // reduction slices of Sᵀ and dPᵀ
  static constexpr int kQuerySlices = C.B_r / 16;             // reduction slices of dV and dK
  static constexpr int kHalfQuerySlices = kHalfQueries / 16;  // ... of a warp's own queries
  static constexpr int kKeySlices = C.B_c / 16;               // reduction slices of dQ
  static constexpr int kDqMTiles = kHalfQueries / 16;
  static constexpr int kDqColumns = kDHead / kKeyGroups;  // a warp's dQ columns
  // dQ is computed in chunks of at most 32 columns so its accumulators (32 registers a chunk)
  // fit beside dK and dV.
  static constexpr int kDqChunkColumns = kDqColumns < 32 ? kDqColumns : 32;
  static constexpr int kDqChunks = kDqColumns / kDqChunkColumns;
  static constexpr int kDqChunkNTiles = kDqChunkColumns / 8;
  static_assert(kDqChunkColumns % 16 == 0, "dQ chunks are whole 16-column ldmatrix tiles");

  // ---- Shared memory ---------------------------------------------------------------------
  // Element offsets of the 16-bit tiles: K and V (B_c x d_head, loaded once), then kStages
  // stages of Q and dO (B_r x d_head each, one query block a stage: the next block loads into
  // one stage while the current one is computed from the other), then P and dS (B_c x B_r,
  // stored transposed: a row per key). Then kStages stages of the fp32 vectors of a query block,
  // L·log2(e) and D (B_r each). After the loop dK and dV go out through K's and V's tiles.
  static constexpr int kStages = 2;
  static constexpr int kKTile = 0;
  static constexpr int kVTile = kKTile + C.B_c * kDHead;
  static constexpr int kQTile =
      kVTile + C.B_c * kDHead;  // stage 0; stage s adds s x kStageElements
  static constexpr int kdOTile = kQTile + C.B_r * kDHead;
  static constexpr int kStageElements = 2 * C.B_r * kDHead;
  static constexpr int kPTile = kQTile + kStages * kStageElements;
  static constexpr int kdSTile = kPTile + C.B_c * C.B_r;
  static constexpr int kTileElements = kdSTile + C.B_c * C.B_r;
  static constexpr int kLseByteOffset = kTileElements * kElementBytes;  // stage 0
  static constexpr int kRowDByteOffset = kLseByteOffset + C.B_r * 4;
  static constexpr int kVectorStageBytes = 2 * C.B_r * 4;
  static constexpr int kSmemBytes = kLseByteOffset + kStages * kVectorStageBytes;

  // P = exp(s / sqrt(d) - L) = exp2(s · log2(e) / sqrt(d) - L · log2(e)): the preprocess stores
  // L · log2(e), and each probability is one FFMA and one ex2.
  static constexpr float kScale = static_cast<float>(1.0 / constexpr_sqrt(kDHead));
  static constexpr float kScaleLog2 =
      static_cast<float>(1.4426950408889634 / constexpr_sqrt(kDHead));
};

// Every SMEM tile of kRows rows is stored as (columns / 64) sub-tiles of kRows x 64 elements,
// sub-tile h starting at element h·kRows·64: a row of a sub-tile is 128 bytes, the width of one
// swizzle pattern, so the swizzle permutes all eight chunks of every row.
inline constexpr int kSubTileColumns = 64;

// Element offset of (row, col) inside one sub-tile (col < 64). The tiles are swizzled: the row's
// low three bits are XOR-ed into the 16-byte chunk index, so whole chunks move and the position
// inside a chunk (col % 8) is kept. The eight rows an ldmatrix phase or a fragment store touches
// at one column then sit in eight different chunks, which spread over all 32 banks; unswizzled,
// their 128-byte rows start in the same bank and the accesses of one instruction conflict
// eight ways. Only per-thread base addresses are computed with it.
template <KernelConfig C>
__device__ __forceinline__ int sub_tile_offset(int row, int col) {
  return row * kSubTileColumns + (col ^ ((row & 7) << 3));
}

// Element offset of (row, col) in a tile of kRows rows.
template <KernelConfig C, int kRows>
__device__ __forceinline__ int smem_offset(int row, int col) {
  return col / kSubTileColumns * kRows * kSubTileColumns +
         sub_tile_offset<C>(row, col % kSubTileColumns);
}

// The constant-stride form of the swizzle for 16-column tiles (the forward's step 8,
// kernels/versions/v16/layout.cuh). Moving an address by 16-column tile t selects sub-tile t / 4
// (a constant offset) and sets logical chunk bits 1 and 2 from t's bits 0 and 1. The swizzle
// XORs those chunk bits with row bits 1 and 2, so for a fixed row setting such a bit moves the
// chunk up (+16 or +32 elements) where the row bit is 0 and down (-16 or -32) where it is 1. A
// thread therefore needs its two signed steps once, and every tile's address is its base plus a
// sum chosen at compile time.
struct TileSteps {
  int bit1;  // elements added when the tile index has bit 1 set: ±32
  int bit0;  // elements added when the tile index has bit 0 set: ±16
};

template <KernelConfig C>
__device__ __forceinline__ TileSteps tile_steps(int row) {
  return {(row & 4) ? -32 : 32, (row & 2) ? -16 : 16};
}

template <int kRows>
__device__ __forceinline__ int tile_offset(const TileSteps& steps, int tile) {
  return tile / 4 * kRows * kSubTileColumns + ((tile & 2) ? steps.bit1 : 0) +
         ((tile & 1) ? steps.bit0 : 0);
}

// The same for 8-column fragments (the accumulator stores): fragment f selects sub-tile f / 8 and
// sets logical chunk bits 0-2 from its own bits 0-2, each XOR-ed with the same row bit, so a
// thread needs three signed steps.
struct FragmentSteps {
  int bit2;  // elements added when the fragment index has bit 2 set: ±32
  int bit1;  // ... bit 1 set: ±16
  int bit0;  // ... bit 0 set: ±8
};

template <KernelConfig C>
__device__ __forceinline__ FragmentSteps fragment_steps(int row) {
  return {(row & 4) ? -32 : 32, (row & 2) ? -16 : 16, (row & 1) ? -8 : 8};
}

template <int kRows>
__device__ __forceinline__ int fragment_offset(const FragmentSteps& steps, int fragment) {
  return fragment / 8 * kRows * kSubTileColumns + ((fragment & 4) ? steps.bit2 : 0) +
         ((fragment & 2) ? steps.bit1 : 0) + ((fragment & 1) ? steps.bit0 : 0);
}

// ---- Workspace (BackwardArgs::workspace) ---------------------------------------------------

// The fp32 dQ accumulator [batch, heads, seq_len, d_head], then D = rowsum(dO ∘ O) and
// L · log2(e), each [batch, heads, padded_len] with padded_len = seq_len rounded up to B_r (the
// preprocess writes 0 in the padding rows, so the main kernel reads whole blocks of them).
struct WorkspaceLayout {
  float* dq_accumulator;
  float* row_d;
  float* row_lse2;
  int padded_len;
};

__host__ __device__ constexpr std::size_t align_256(std::size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

template <KernelConfig C>
struct Workspace {
  __host__ __device__ static int padded_len(const BackwardArgs& args) {
    return (args.seq_len + C.B_r - 1) / C.B_r * C.B_r;
  }
  __host__ __device__ static std::size_t accumulator_bytes(const BackwardArgs& args) {
    return align_256(static_cast<std::size_t>(args.batch) * args.n_heads * args.seq_len * C.d_head *
                     sizeof(float));
  }
  __host__ __device__ static std::size_t vector_bytes(const BackwardArgs& args) {
    return align_256(static_cast<std::size_t>(args.batch) * args.n_heads * padded_len(args) *
                     sizeof(float));
  }
  __host__ __device__ static std::size_t bytes(const BackwardArgs& args) {
    return accumulator_bytes(args) + 2 * vector_bytes(args);
  }
  __host__ __device__ static WorkspaceLayout layout(const BackwardArgs& args) {
    char* const base = static_cast<char*>(args.workspace);
    return {reinterpret_cast<float*>(base),
            reinterpret_cast<float*>(base + accumulator_bytes(args)),
            reinterpret_cast<float*>(base + accumulator_bytes(args) + vector_bytes(args)),
            padded_len(args)};
  }
};

}  // namespace flashscope::b02
