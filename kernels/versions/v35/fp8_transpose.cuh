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
#include "kernels/versions/v35/fp8_layout.cuh"

namespace flashscope::v35 {

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
//
// Step 33: the same bytes to the same places as step 32's loop, by a shorter path to a published
// Vᵀ tile (docs/versions/33.md). Step 32 computed each of an item's eight addresses through
// swizzled_128 (about 30 integer instructions an item around its 4 LDS, 6 PRMT and 4 STS, in one
// dependent chain) and moved one item at a time. Here the swizzle is split into what a lane keeps
// and what an item adds:
//  * loads: key rows 16s + 2t + e (e = 0, 1, 8, 9) at columns 32b' + 4q of sub-tile b / 4
//    (b' = b % 4, q = lane / 4). The chunk (column / 16) ^ (row % 8) is
//    (2b' + q / 4) ^ (2t + e % 2) = 2(b' ^ t) + (q / 4 ^ e % 2): the item adds 32 (b' ^ t) and
//    2048 s, the lane's part is fixed for e = 0 and 1, and rows 8 and 9 are 1024 bytes further
//    (immediate offsets);
//  * stores: Vᵀ rows 32b + 4q + c at positions 16s + 4t, chunk s ^ (4 (q % 2) + c). The tile is
//    1024-byte aligned and 512q + 4t leaves bits 4-6 clear, so the row of c = 0 is one OR of
//    16 (s ^ 4 (q % 2)), and row c flips bits 4-5 of it by XOR (one LOP3) at +128c (immediate).
// and each warp moves two items at once where the producer has 40 registers: the eight loads of
// items i and i + 3 are issued before either's PRMTs, so one shared-memory latency covers both.
template <KernelConfig C>
__device__ __forceinline__ void transpose_V_tile(std::uint32_t V_tile, std::uint32_t Vt_tile,
                                                 int thread) {
  using Sh = Fp8Shape<C>;
  constexpr int kColumnBlocks = Sh::kDHead / 32;  // 32 columns per warp item
  constexpr int kItems = Sh::kPVSteps * 2 * kColumnBlocks;
  constexpr int kBlocksPerSubTile = Sh::kRowBytes / 32;
  constexpr std::uint32_t kSubTileBytes = C.B_c * Sh::kRowBytes;
  static_assert((kColumnBlocks & (kColumnBlocks - 1)) == 0, "d_head / 32 is a power of two");
  const int warp = thread / 32;
  const int lane = thread % 32;
  const int t = lane % 4;
  const int q = lane / 4;
  // The lane's part of the load addresses of rows 2t (even) and 2t + 1 (odd) of a 16-key group.
  const std::uint32_t load_even =
      static_cast<std::uint32_t>(2 * t * 128 + (q >> 2) * 16 + (q & 3) * 4);
  const std::uint32_t load_odd =
      static_cast<std::uint32_t>((2 * t + 1) * 128 + ((q >> 2) ^ 1) * 16 + (q & 3) * 4);
  // The lane's part of the store address of Vᵀ row 4q (of a 32-row block) at position 4t, and
  // the row's swizzle key (row % 8 = 4 (q % 2) for c = 0).
  const std::uint32_t store_lane = Vt_tile + static_cast<std::uint32_t>(q * 512 + t * 4);
  const int store_key = (q & 1) * 4;

  auto load_item = [&](int item, std::uint32_t(&block)[4]) {
    const int b = item % kColumnBlocks;
    const int s = item / kColumnBlocks;  // 16-key group: 32-key step · 2 + half
    const std::uint32_t base =
        V_tile + static_cast<std::uint32_t>(b / kBlocksPerSubTile) * kSubTileBytes +
        static_cast<std::uint32_t>(s * 2048 + (((b % kBlocksPerSubTile) ^ t) << 5));
    block[0] = ld_shared_u32(base + load_even);
    block[1] = ld_shared_u32(base + load_odd);
    block[2] = ld_shared_u32(base + load_even + 1024);
    block[3] = ld_shared_u32(base + load_odd + 1024);
  };
  auto store_item = [&](int item, const std::uint32_t(&block)[4]) {
    const int b = item % kColumnBlocks;
    const int s = item / kColumnBlocks;
    const std::uint32_t row =
        store_lane + static_cast<std::uint32_t>(b * 4096 + ((s ^ store_key) << 4));
#pragma unroll
    for (int c = 0; c < 4; ++c)
      st_shared_u32((row ^ static_cast<std::uint32_t>(c << 4)) + c * 128, block[c]);
  };
  // Two items in flight need about 8 registers more than one: with 40 (regs_240's split) ptxas
  // spills nothing, with the 32 of regs_160 (three consumers at d_head 64) it would, so there the
  // warp moves one item at a time, with the same addressing.
  constexpr int kInFlight = Sh::kProducerRegisters >= 40 ? 2 : 1;
#pragma unroll 1
  for (int item = warp; item < kItems; item += kInFlight * kTransposeWarps) {
    std::uint32_t first_block[4];
    load_item(item, first_block);
    if constexpr (kInFlight == 2) {
      const int second = item + kTransposeWarps;
      const bool has_second = second < kItems;  // uniform in the warp
      std::uint32_t second_block[4];
      if (has_second) load_item(second, second_block);
      transpose_4x4_bytes(first_block);
      store_item(item, first_block);
      if (has_second) {
        transpose_4x4_bytes(second_block);
        store_item(second, second_block);
      }
    } else {
      transpose_4x4_bytes(first_block);
      store_item(item, first_block);
    }
  }
}

}  // namespace flashscope::v35
