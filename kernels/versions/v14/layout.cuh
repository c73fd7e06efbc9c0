// Compile-time shape of one kernel instantiation of step 14 and the SMEM tile layout
// (spec §3.1, §4.2, §4.8).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/common/config.hpp"

namespace flashscope::v14 {

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

template <KernelConfig C>
struct Shape {
  // At class scope, so the host-only constexpr config helpers need no relaxed-constexpr flag.
  static_assert(is_statically_valid(C), "invalid KernelConfig (see static_config_violation)");

  using Element = typename ElementOf<C.dtype>::type;

  static constexpr int kDHead = C.d_head;
  static constexpr int kThreads = 32 * C.n_warps;

  // Block copies are CTA-cooperative (spec §4.8): thread tid moves row tid / 8 and 16-byte
  // chunk tid % 8 of every kCopyRows-row x 64-column patch. A patch must be a multiple of 8 rows
  // so that stepping from patch to patch keeps row mod 8, and with it the swizzle, unchanged.
  static constexpr int kCopyRows = kThreads / 8;
  static_assert(kCopyRows % 8 == 0, "steps 8-16 need an even n_warps (copy patches of 8k rows)");
  static_assert(C.B_r % kCopyRows == 0 && C.B_c % kCopyRows == 0,
                "B_r and B_c must be whole copy patches of 4 * n_warps rows");

  // Warp w owns query rows [w·R, (w+1)·R) of the block (R = kWarpQueryRows) in registers.
  static constexpr int kWarpQueryRows = C.B_r / C.n_warps;

  // mma m16n8k16 tiling of this warp's share: S = Q·Kᵀ is (R × B_c), O = P·V is (R × d).
  static constexpr int kMTiles = kWarpQueryRows / 16;
  static constexpr int kScoreNTiles = C.B_c / 8;
  static constexpr int kOutputNTiles = kDHead / 8;
  static constexpr int kQKSlices = kDHead / 16;  // 16-wide reduction slices of Q·Kᵀ
  static constexpr int kPVSlices = C.B_c / 16;   // 16-key reduction slices of P·V

  // Element offsets of the three SMEM tiles; O reuses Q's tile (spec §2.4).
  static constexpr int kQTileOffset = 0;
  static constexpr int kKTileOffset = C.B_r * kDHead;
  static constexpr int kVTileOffset = kKTileOffset + C.B_c * kDHead;

  // exp(x / sqrt(d)) = exp2(x · log2(e) / sqrt(d)): the softmax folds both factors into one FFMA.
  static constexpr float kSoftmaxScaleLog2 =
      static_cast<float>(1.4426950408889634 / constexpr_sqrt(kDHead));
};

// Element offset of (row, col) in a row-major SMEM tile of d_head columns. Swizzled tiles XOR
// the row's low three bits into the 16-byte chunk index within each 64-column group (spec
// §4.2), so whole chunks move and the position inside a chunk (col % 8) is kept. From step 11 on,
// only per-thread base addresses are computed with it.
template <KernelConfig C>
__device__ __forceinline__ int smem_offset(int row, int col) {
  if constexpr (C.swizzled) {
    return row * C.d_head + (col ^ ((row & 7) << 3));
  } else {
    return row * C.d_head + col;
  }
}

// The constant-stride form of the swizzle for 16-column tiles (spec §4.8). Moving an address by
// 16-column tile t sets logical chunk bits 1 and 2 from t's bits 0 and 1 (and chunk bit 3, the
// 64-column group, from t's bit 2). The swizzle XORs chunk bits 1 and 2 with row bits 1 and 2,
// so for a fixed row setting such a bit moves the chunk up (+16 or +32 elements) where the row
// bit is 0 and down (-16 or -32) where it is 1; bit 3 is not swizzled (+64 always). A thread
// therefore needs its two signed steps once, and every tile's address is its base plus a sum
// chosen at compile time. Unswizzled tiles use the plain (+32, +16).
struct TileSteps {
  int bit1;  // elements added when the tile index has bit 1 set: ±32
  int bit0;  // elements added when the tile index has bit 0 set: ±16
};

template <KernelConfig C>
__device__ __forceinline__ TileSteps tile_steps(int row) {
  if constexpr (C.swizzled) {
    return {(row & 4) ? -32 : 32, (row & 2) ? -16 : 16};
  } else {
    return {32, 16};
  }
}

// Element offset of 16-column tile `tile` from the same position in tile 0. After unrolling,
// `tile` is a compile-time constant and this folds to an immediate plus 0, bit0, bit1 or both.
__device__ __forceinline__ int tile_offset(const TileSteps& steps, int tile) {
  return 64 * (tile / 4) + ((tile & 2) ? steps.bit1 : 0) + ((tile & 1) ? steps.bit0 : 0);
}

// The same constant-stride form for 8-column fragments (spec §4.11), used by the O stores:
// fragment f sets logical chunk bits 0-2 from its own bits 0-2 (and the 64-column group from
// bit 3), each XOR-ed with the same row bit, so a thread needs three signed steps.
struct FragmentSteps {
  int bit2;  // elements added when the fragment index has bit 2 set: ±32
  int bit1;  // ... bit 1 set: ±16
  int bit0;  // ... bit 0 set: ±8
};

template <KernelConfig C>
__device__ __forceinline__ FragmentSteps fragment_steps(int row) {
  if constexpr (C.swizzled) {
    return {(row & 4) ? -32 : 32, (row & 2) ? -16 : 16, (row & 1) ? -8 : 8};
  } else {
    return {32, 16, 8};
  }
}

// Element offset of 8-column fragment `fragment` from the same position in fragment 0.
__device__ __forceinline__ int fragment_offset(const FragmentSteps& steps, int fragment) {
  return 64 * (fragment / 8) + ((fragment & 4) ? steps.bit2 : 0) +
         ((fragment & 2) ? steps.bit1 : 0) + ((fragment & 1) ? steps.bit0 : 0);
}

}  // namespace flashscope::v14
