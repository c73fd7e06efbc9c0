#include "profiling/npy.hpp"

#include <cuda_runtime.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "kernels/common/cuda_check.hpp"

namespace flashscope {

std::string npy_header(std::string_view descr, const std::vector<std::int64_t>& shape) {
  std::string dict = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (i + 1 < shape.size() || shape.size() == 1) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  constexpr std::size_t kPreamble = 10;             // magic (6), version (2), header length (2)
  std::size_t total = kPreamble + dict.size() + 1;  // + the closing newline
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  const std::size_t length = dict.size();
  std::string header = "\x93NUMPY";
  header += '\x01';
  header += '\x00';
  header += static_cast<char>(length & 0xff);
  header += static_cast<char>((length >> 8) & 0xff);
  return header + dict;
}

void write_npy(const std::string& path, std::string_view descr,
               const std::vector<std::int64_t>& shape, const void* data, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  const std::string header = npy_header(descr, shape);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw std::runtime_error(path + ": write failed");
}

void write_device_tensor_npy(const std::string& path, DType dtype,
                             const std::vector<std::int64_t>& shape, const void* device_data) {
  // Written for 16-bit elements (fp16 as is, bf16 widened below); an e4m3 tensor is half the
  // bytes and would be read past its end.
  if (element_bytes(dtype) != 2)
    throw std::invalid_argument(path + ": .npy dumps are written for fp16 and bf16 tensors, not " +
                                std::string(dtype_lower_name(dtype)));
  std::size_t count = 1;
  for (const std::int64_t extent : shape)
    count *= static_cast<std::size_t>(extent);
  std::vector<std::uint16_t> bits(count);
  FS_CUDA_CHECK(
      cudaMemcpy(bits.data(), device_data, count * sizeof(std::uint16_t), cudaMemcpyDeviceToHost));
  if (dtype == DType::FP16) {
    write_npy(path, "<f2", shape, bits.data(), count * sizeof(std::uint16_t));
    return;
  }
  // bf16 is the upper half of a float32: shifting the bits up is the exact conversion.
  std::vector<float> widened(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t word = static_cast<std::uint32_t>(bits[i]) << 16;
    std::memcpy(&widened[i], &word, sizeof(word));
  }
  write_npy(path, "<f4", shape, widened.data(), count * sizeof(float));
}

}  // namespace flashscope
