// Compile-time shape of one kernel instantiation of steps 1-7 and the SMEM tile layout
// (spec §3.1, §4.1, §4.2).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/common/config.hpp"

namespace flashscope::v01_07 {

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
  // Spec §7.1: K and V are copied per warp, at least 8 rows and whole 4-row patches each.
  static_assert(C.B_c / 8 >= C.n_warps, "steps 1-7 copy K/V per warp and need B_c / 8 >= n_warps");
  static_assert(C.B_c % (4 * C.n_warps) == 0, "each warp copies whole 4-row patches of K and V");

  using Element = typename ElementOf<C.dtype>::type;

  static constexpr int kDHead = C.d_head;

  // Warp w owns query rows [w·R, (w+1)·R) of the block (R = kWarpQueryRows) in SMEM and in
  // registers, and copies K/V rows [w·kWarpKVRows, (w+1)·kWarpKVRows) of every KV block.
  static constexpr int kWarpQueryRows = C.B_r / C.n_warps;
  static constexpr int kWarpKVRows = C.B_c / C.n_warps;

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

  static constexpr float kSoftmaxScale = static_cast<float>(1.0 / constexpr_sqrt(kDHead));
  // exp(x·scale) = exp2(x·scale·log2(e)): the exp2 form folds both factors into one FFMA.
  static constexpr float kSoftmaxScaleLog2 =
      static_cast<float>(1.4426950408889634 / constexpr_sqrt(kDHead));
};

// Element offset of (row, col) in a row-major SMEM tile of d_head columns. Swizzled tiles XOR
// the row's low three bits into the 16-byte chunk index within each 64-column group (spec
// §4.2), so whole chunks move and the position inside a chunk (col % 8) is kept. The eight rows
// an ldmatrix 8x8 read or an O fragment store touches then fall into eight distinct bank groups
// instead of one. Steps 1-7 compute it at run time for every access; step 8 makes it a
// per-thread base plus compile-time strides.
template <KernelConfig C>
__device__ __forceinline__ int smem_offset(int row, int col) {
  if constexpr (C.swizzled) {
    return row * C.d_head + (col ^ ((row & 7) << 3));
  } else {
    return row * C.d_head + col;
  }
}

}  // namespace flashscope::v01_07
