// The in-kernel transpose of V for the FP8 path (docs/versions/28.md, fp8-track.md §4.1). 8-bit
// wgmma reads its B operand K-major only and has no transpose bit, and V as the B of P·V arrives
// by TMA key-major (a key's d_head values contiguous). Warps 1–3 of the producer warpgroup (warp
// 0's first thread issues the TMA copies) rewrite each V tile into a Vᵀ tile: row n holds the B_c
// keys of column n, one 128-byte swizzled row, as wgmma reads a K-major B.
//
// The key order inside a row is not the natural one. P enters P·V from the registers in the 8-bit
// A-fragment layout, where lane (g, t) holds k positions 4t .. 4t + 3 (and 16 + 4t ..) of its rows,
// while the fp32 accumulator of S gives it keys 2t, 2t + 1 of each 8-key fragment. Rather than
// shuffle P between lanes, the transpose stores V's keys in the order the accumulators give:
// within every 32-key step, position p = 16·p4 + 4·t + i (i = 0..3) holds key
// 16·p4 + 8·(i / 2) + 2·t + i % 2. Lane t's bytes for positions 4t .. 4t + 3 are then the keys
// 2t, 2t + 1 of fragments 4j and 4j + 1 it already holds (fp8_kernel.cuh,
// convert_to_fp8_A_fragments): P needs cvt and byte packing only, and the k order of P and Vᵀ
// agree, so P·V sums the same products.
//
// Each lane moves a 4 x 4 block of bytes: four 4-byte loads (keys k, k + 1, k + 8, k + 9 at four
// consecutive columns), a byte transpose by six PRMTs, four 4-byte stores (four Vᵀ rows at four
// consecutive positions). A warp's 32 lanes cover 16 positions (t = lane % 4) x 32 columns
// (lane / 4): the loads of a warp touch 32 different banks through the swizzle.
#pragma once

#include <cstdint>

#include "kernels/common/config.hpp"
#include "kernels/versions/v33/fp8_layout.cuh"

namespace flashscope::v33 {

// The producer warpgroup's warps that transpose (1–3) and the named barrier they meet at before
// one of them marks a Vᵀ tile full (0: __syncthreads, 3–4: the consumers' turns).
inline constexpr int kTransposeWarps = 3;
inline constexpr int kTransposeThreads = 32 * kTransposeWarps;
inline constexpr int kTransposeBarrier = 6;

__device__ __forceinline__ std::uint32_t ld_shared_u32(std::uint32_t address) {
  std::uint32_t value;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(value) : "r"(address) : "memory");
  return value;
}

__device__ __forceinline__ void st_shared_u32(std::uint32_t address, std::uint32_t value) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(address), "r"(value) : "memory");
}

// Bytes of {b, a} (a bytes 0–3, b bytes 4–7) selected by the nibbles of `selector`.
__device__ __forceinline__ std::uint32_t byte_permute(std::uint32_t a, std::uint32_t b,
                                                      std::uint32_t selector) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return d;
}

// 4 x 4 bytes: on entry rows[r] holds 4 columns of row r; on return rows[c] holds column c of rows
// 0..3 (row r in byte r).
__device__ __forceinline__ void transpose_4x4_bytes(std::uint32_t (&rows)[4]) {
  const std::uint32_t low_01 = byte_permute(rows[0], rows[1], 0x5140);   // r0.0 r1.0 r0.1 r1.1
  const std::uint32_t low_23 = byte_permute(rows[2], rows[3], 0x5140);   // r2.0 r3.0 r2.1 r3.1
  const std::uint32_t high_01 = byte_permute(rows[0], rows[1], 0x7362);  // r0.2 r1.2 r0.3 r1.3
  const std::uint32_t high_23 = byte_permute(rows[2], rows[3], 0x7362);  // r2.2 r3.2 r2.3 r3.3
  rows[0] = byte_permute(low_01, low_23, 0x5410);
  rows[1] = byte_permute(low_01, low_23, 0x7632);
  rows[2] = byte_permute(high_01, high_23, 0x5410);
  rows[3] = byte_permute(high_01, high_23, 0x7632);
}

// Transposes the V tile at `V_tile` (B_c key rows in sub-tiles of 128 columns) into the Vᵀ tile at
// `Vt_tile` (d_head rows of B_c keys in the order above). `thread` is 0 .. kTransposeThreads - 1.
// Generic-proxy stores: the caller fences them for wgmma (fence.proxy.async) before publishing.
template <KernelConfig C>
__device__ __forceinline__ void transpose_V_tile(std::uint32_t V_tile, std::uint32_t Vt_tile,
                                                 int thread) {
  using Sh = Fp8Shape<C>;
  constexpr int kColumnBlocks = Sh::kDHead / 32;  // 32 columns per warp item
  constexpr int kItems = Sh::kPVSteps * 2 * kColumnBlocks;
  const int warp = thread / 32;
  const int lane = thread % 32;
  const int t = lane % 4;
  const int column_in_block = lane / 4 * 4;
#pragma unroll 1
  for (int item = warp; item < kItems; item += kTransposeWarps) {
    const int sixteen_keys = item / kColumnBlocks;  // 32-key step · 2 + half
    const int column = item % kColumnBlocks * 32 + column_in_block;
    const int first_key = sixteen_keys * 16 + 2 * t;
    const std::uint32_t V_sub_tile =
        V_tile + static_cast<std::uint32_t>(column / Sh::kRowBytes * C.B_c * Sh::kRowBytes);
    const int sub_column = column % Sh::kRowBytes;
    std::uint32_t block[4];
    block[0] = ld_shared_u32(V_sub_tile + swizzled_128(first_key, sub_column));
    block[1] = ld_shared_u32(V_sub_tile + swizzled_128(first_key + 1, sub_column));
    block[2] = ld_shared_u32(V_sub_tile + swizzled_128(first_key + 8, sub_column));
    block[3] = ld_shared_u32(V_sub_tile + swizzled_128(first_key + 9, sub_column));
    transpose_4x4_bytes(block);
    const int position = sixteen_keys * 16 + 4 * t;
#pragma unroll
    for (int c = 0; c < 4; ++c)
      st_shared_u32(Vt_tile + swizzled_128(column + c, position), block[c]);
  }
}

}  // namespace flashscope::v33
