// Host-side logic of the Hopper track's shared helpers, checked without a GPU: the wgmma
// shared-memory descriptor's bit packing, the TMA tensor-map description of a
// [batch, seq_len, heads, d_head] tensor, and the launch rules of the Hopper steps.
#include <doctest/doctest.h>

#include <string>

#include "configs/launch_validation.hpp"
#include "kernels/common/tensor_map.hpp"
#include "kernels/common/wgmma_descriptor.hpp"

using namespace flashscope;

namespace {

KernelConfig hopper(int B_r, int B_c, int n_warps, int stages, int consumer_regs = 0) {
  KernelConfig c{};
  c.dtype = DType::FP16;
  c.d_head = 128;
  c.B_r = B_r;
  c.B_c = B_c;
  c.n_warps = n_warps;
  c.stages = stages;
  c.consumer_regs = consumer_regs;
  return c;
}

ForwardArgs args_for(int batch, int seq_len, int heads, int d_head = 128) {
  ForwardArgs args{};
  args.batch = batch;
  args.seq_len = seq_len;
  args.n_heads = heads;
  args.head_stride = d_head;
  args.seq_stride = static_cast<std::int64_t>(heads) * d_head;
  args.batch_stride = static_cast<std::int64_t>(seq_len) * heads * d_head;
  return args;
}

std::string tensor_map_error(const ForwardArgs& args, int box_rows, int d_head = 128) {
  try {
    attention_tensor_map_spec(DType::FP16, d_head, args, box_rows);
  } catch (const TensorMapError& error) {
    return error.what();
  }
  return "no error";
}

char storage[4];

}  // namespace

TEST_CASE("wgmma descriptors pack the PTX ISA's fields") {
  // A K-major 128-byte-swizzled tile at shared address 0x4400: leading offset unused (16),
  // stride 1024 between 8-row groups.
  const std::uint64_t descriptor = wgmma::make_descriptor(0x4400, 16, 1024);
  CHECK((descriptor & 0x3FFF) == 0x4400 >> 4);
  CHECK(((descriptor >> 16) & 0x3FFF) == 1);
  CHECK(((descriptor >> 32) & 0x3FFF) == 64);
  CHECK(((descriptor >> 49) & 0x7) == 0);  // base offset: tiles start on 1024-byte boundaries
  CHECK((descriptor >> 62) == 1);          // 128-byte swizzle
  CHECK(wgmma::descriptor_start_address(descriptor) == 0x4400);
  CHECK(wgmma::descriptor_leading_bytes(descriptor) == 16);
  CHECK(wgmma::descriptor_stride_bytes(descriptor) == 1024);
  CHECK(wgmma::descriptor_swizzle(descriptor) == wgmma::Swizzle::bytes128);
  // An MN-major V tile of 128 rows: the leading offset jumps to the next 64 columns.
  const std::uint64_t v = wgmma::make_descriptor(0x8000, 128 * 128, 1024);
  CHECK(wgmma::descriptor_leading_bytes(v) == 16384);
  // Advancing moves the start address only, in 16-byte units, without touching other fields.
  const std::uint64_t next_k_step = wgmma::advance_descriptor(descriptor, 32);
  CHECK(wgmma::descriptor_start_address(next_k_step) == 0x4400 + 32);
  CHECK(wgmma::descriptor_stride_bytes(next_k_step) == 1024);
  CHECK(wgmma::descriptor_swizzle(next_k_step) == wgmma::Swizzle::bytes128);
  // The largest shared address of an sm_90 CTA still fits the 14-bit field (no carry).
  const std::uint64_t top = wgmma::make_descriptor(227 * 1024 - 16, 16, 1024);
  CHECK(wgmma::descriptor_start_address(top) == 227 * 1024 - 16);
  CHECK(wgmma::descriptor_leading_bytes(top) == 16);
}

TEST_CASE("a TMA tensor map is the tensor's real 4-D extent with 64-column boxes") {
  const TensorMapSpec spec =
      attention_tensor_map_spec(DType::BF16, 128, args_for(2, 1024, 16), 176);
  CHECK(spec.data_type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  CHECK(spec.dims == std::array<cuuint64_t, 4>{128, 16, 1024, 2});  // d, heads, N, batch
  CHECK(spec.strides_bytes == std::array<cuuint64_t, 3>{256, 16 * 256, 1024 * 16 * 256});
  CHECK(spec.box == std::array<cuuint32_t, 4>{64, 1, 176, 1});
  CHECK(spec.element_strides == std::array<cuuint32_t, 4>{1, 1, 1, 1});
  CHECK(attention_tensor_map_spec(DType::FP16, 128, args_for(1, 64, 3), 64).data_type ==
        CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
}

TEST_CASE("an e4m3 tensor map has 128-column boxes: the same 128-byte row") {
  // The FP8 path of step 28 (docs/spec/fp8-track.md §4.1): bytes, strides in bytes = elements.
  const TensorMapSpec spec =
      attention_tensor_map_spec(DType::E4M3, 128, args_for(2, 1024, 16), 128);
  CHECK(spec.data_type == CU_TENSOR_MAP_DATA_TYPE_UINT8);
  CHECK(spec.strides_bytes == std::array<cuuint64_t, 3>{128, 16 * 128, 1024 * 16 * 128});
  CHECK(spec.box == std::array<cuuint32_t, 4>{128, 1, 128, 1});
  // d_head 64 is half a box row: the box reaches past d_head, and TMA fills the rest with zeros.
  CHECK(attention_tensor_map_spec(DType::E4M3, 64, args_for(2, 1024, 16, 64), 128).box[0] == 128);
}

TEST_CASE("every TMA rule a layout or box breaks is named") {
  CHECK(tensor_map_error(args_for(1, 1024, 16), 0).find("box of 0 rows is outside 1–256") !=
        std::string::npos);
  CHECK(tensor_map_error(args_for(1, 1024, 16), 257).find("outside 1–256") != std::string::npos);
  CHECK(tensor_map_error(args_for(1, 1024, 16, 96), 64, 96).find("multiple of the 64-column") !=
        std::string::npos);
  CHECK(tensor_map_error(args_for(0, 1024, 16), 64).find("the tensor is empty") !=
        std::string::npos);
  ForwardArgs odd = args_for(1, 1024, 16);
  odd.seq_stride = 16 * 128 + 3;  // 4102 bytes: not a multiple of 16
  CHECK(tensor_map_error(odd, 64).find("sequence stride of 4102 bytes") != std::string::npos);
  CHECK_THROWS_WITH_AS(
      encode_tensor_map(attention_tensor_map_spec(DType::FP16, 128, args_for(1, 64, 1), 64),
                        storage + 1),
      doctest::Contains("not 16-byte aligned"), TensorMapError);
}

TEST_CASE("a Hopper kernel is refused on any GPU but compute capability 9.0, naming both") {
  KernelEntry entry;
  entry.step = 18;
  entry.config = hopper(128, 128, 8, 2);
  entry.exact_compute_capability = 90;
  static char q, k, v, o;
  const std::array<std::int64_t, 4> shape{1, 1024, 16, 128};
  const auto view = [&](const void* data) {
    return TensorView{data, DType::FP16, MemoryLocation::device, shape, contiguous_strides(shape)};
  };
  const AttentionTensors tensors{view(&q), view(&k), view(&v), view(&o)};
  CHECK_NOTHROW(validate_launch(entry, tensors, 90, 0));
  CHECK_THROWS_WITH_AS(validate_launch(entry, tensors, 80, 0),
                       "step 18 needs an sm_90a (Hopper) GPU; device 0 is sm_80",
                       LaunchValidationError);
  CHECK_THROWS_WITH_AS(validate_launch(entry, tensors, 100),
                       "step 18 needs an sm_90a (Hopper) GPU; this device is sm_100",
                       LaunchValidationError);
}

TEST_CASE("each Hopper step's own rules") {
  const auto reason = [](int step, const KernelConfig& c) {
    return unsupported_combination(step, c).value_or("supported");
  };
  CHECK(reason(17, hopper(128, 128, 8, 1)) == "supported");
  CHECK(reason(17, hopper(128, 128, 8, 2)).find("stages must be 1") != std::string::npos);
  CHECK(reason(17, hopper(128, 80, 8, 1)).find("multiples of 32") != std::string::npos);
  CHECK(reason(18, hopper(128, 128, 8, 3)) == "supported");
  CHECK(reason(18, hopper(128, 128, 12, 2, 240)).find("has no producer warpgroup") !=
        std::string::npos);
  CHECK(reason(19, hopper(128, 128, 12, 2, 240)) == "supported");
  CHECK(reason(19, hopper(128, 128, 8, 2)).find("needs the producer warpgroup") !=
        std::string::npos);
  CHECK(reason(20, hopper(192, 128, 16, 2, 160)).find("B_r must be 128, not 192") !=
        std::string::npos);
  CHECK(reason(21, hopper(128, 128, 12, 1, 240)).find("stages must be >= 2") != std::string::npos);
  CHECK(reason(21, hopper(128, 128, 12, 2)).find("invalid config") == std::string::npos);
  CHECK(reason(21, hopper(128, 128, 12, 2)).find("consumer_regs (regs_N) must be set") !=
        std::string::npos);
  // Ampere and Hopper configs stay on their own side of step 16/17.
  const KernelConfig ampere{DType::FP16, 128, 128, 64, 4, true, true, true, 2, 2, 0, true, false};
  CHECK(reason(17, ampere).find("needs a Hopper config") != std::string::npos);
  CHECK(reason(16, hopper(128, 128, 8, 1)).find("is an Ampere step") != std::string::npos);
}
