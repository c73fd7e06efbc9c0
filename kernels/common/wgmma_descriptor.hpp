// The 64-bit shared-memory matrix descriptor that `wgmma.mma_async` takes for an operand in SMEM
// (PTX ISA, "Matrix Descriptor Format"). Host and device code share it so the bit packing is unit
// tested without a GPU.
//
//   bits  0-13  start address >> 4 (a shared-space byte address)
//   bits 16-29  leading dimension byte offset >> 4
//   bits 32-45  stride dimension byte offset >> 4
//   bits 49-51  matrix base offset (0: every tile starts on a 1024-byte swizzle boundary)
//   bits 62-63  swizzle mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
//
// flashscope's Hopper steps only use the 128-byte swizzle with 16-bit elements: an atom is 8 rows
// of 128 bytes (64 elements), the 16-byte chunk index XOR-ed with the row index mod 8 — exactly the
// SMEM layout of steps 15–16 (64-column sub-tiles, swizzled chunks) and of a TMA box written with
// CU_TENSOR_MAP_SWIZZLE_128B.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.hpp"

namespace flashscope::wgmma {

enum class Swizzle : std::uint64_t { none = 0, bytes128 = 1, bytes64 = 2, bytes32 = 3 };

// 8 rows of 128 bytes: the distance between two 8-row core-matrix groups of a 128B-swizzled tile.
inline constexpr std::uint32_t kSwizzle128AtomBytes = 1024;

FS_HOST_DEVICE constexpr std::uint64_t encode_field(std::uint32_t bytes) {
  return (static_cast<std::uint64_t>(bytes) >> 4) & 0x3FFF;
}

// A descriptor for the tile starting at `smem_address`. For a K-major operand with the 128-byte
// swizzle the leading offset is unused (the K extent of one wgmma, 32 bytes, stays inside an atom;
// PTX says to set it to 1, i.e. 16 bytes) and the stride offset is the 1024 bytes between 8-row
// groups. For an MN-major operand the leading offset is the distance between 64-element column
// groups of the MN dimension and the stride offset again the 1024 bytes between 8-row groups of K.
FS_HOST_DEVICE constexpr std::uint64_t make_descriptor(std::uint32_t smem_address,
                                                       std::uint32_t leading_byte_offset,
                                                       std::uint32_t stride_byte_offset,
                                                       Swizzle swizzle = Swizzle::bytes128) {
  return encode_field(smem_address) | (encode_field(leading_byte_offset) << 16) |
         (encode_field(stride_byte_offset) << 32) | (static_cast<std::uint64_t>(swizzle) << 62);
}

// The same tile `bytes` further on (a multiple of 16). The start address field has room for every
// shared-space address (< 256 KB), so the sum never carries into the leading offset.
FS_HOST_DEVICE constexpr std::uint64_t advance_descriptor(std::uint64_t descriptor,
                                                          std::uint32_t bytes) {
  return descriptor + (bytes >> 4);
}

FS_HOST_DEVICE constexpr std::uint32_t descriptor_start_address(std::uint64_t descriptor) {
  return static_cast<std::uint32_t>(descriptor & 0x3FFF) << 4;
}
FS_HOST_DEVICE constexpr std::uint32_t descriptor_leading_bytes(std::uint64_t descriptor) {
  return static_cast<std::uint32_t>((descriptor >> 16) & 0x3FFF) << 4;
}
FS_HOST_DEVICE constexpr std::uint32_t descriptor_stride_bytes(std::uint64_t descriptor) {
  return static_cast<std::uint32_t>((descriptor >> 32) & 0x3FFF) << 4;
}
FS_HOST_DEVICE constexpr Swizzle descriptor_swizzle(std::uint64_t descriptor) {
  return static_cast<Swizzle>(descriptor >> 62);
}

}  // namespace flashscope::wgmma
