// NumPy .npy files (format 1.0) for `explorer check --dump`, so inputs and outputs of a failing
// check can be opened with numpy.load. fp16 is written as '<f2'; bf16 has no numpy dtype and is
// widened to '<f4', which is exact (every bf16 value is a float32).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/config.hpp"

namespace flashscope {

// The .npy header for a C-ordered array: magic, version 1.0, header length, dict, padding to a
// multiple of 64 bytes.
std::string npy_header(std::string_view descr, const std::vector<std::int64_t>& shape);

// Writes header and `bytes` bytes of `data`; throws std::runtime_error naming the path.
void write_npy(const std::string& path, std::string_view descr,
               const std::vector<std::int64_t>& shape, const void* data, std::size_t bytes);

// Copies a device tensor of `dtype` to the host and writes it (fp16 '<f2', bf16 as '<f4').
void write_device_tensor_npy(const std::string& path, DType dtype,
                             const std::vector<std::int64_t>& shape, const void* device_data);

}  // namespace flashscope
