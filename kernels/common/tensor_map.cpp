#include "kernels/common/tensor_map.hpp"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <string>

namespace flashscope {

namespace {

[[noreturn]] void reject(const std::string& message) {
  throw TensorMapError("TMA tensor map: " + message);
}

PFN_cuTensorMapEncodeTiled_v12000 encode_entry_point() {
  static const PFN_cuTensorMapEncodeTiled_v12000 entry = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function,
                                                                12000, cudaEnableDefault, &query);
    if (status != cudaSuccess || query != cudaDriverEntryPointSuccess || function == nullptr)
      reject(std::string("the driver does not provide cuTensorMapEncodeTiled (") +
             cudaGetErrorString(status) + ", query result " + std::to_string(query) +
             "); TMA needs a CUDA 12+ driver");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  }();
  return entry;
}

}  // namespace

AttentionTensorLayout query_layout(const ForwardArgs& args) {
  return {args.batch,        args.seq_len,    args.n_heads,
          args.batch_stride, args.seq_stride, args.head_stride};
}

AttentionTensorLayout key_value_layout(const ForwardArgs& args) {
  return {args.batch,           args.seq_len,       args.n_kv_heads,
          args.kv_batch_stride, args.kv_seq_stride, args.kv_head_stride};
}

TensorMapSpec attention_tensor_map_spec(DType dtype, int d_head, const ForwardArgs& args,
                                        int box_rows) {
  return attention_tensor_map_spec(dtype, d_head, query_layout(args), box_rows);
}

TensorMapSpec attention_tensor_map_spec(DType dtype, int d_head,
                                        const AttentionTensorLayout& layout, int box_rows) {
  // The box is one 128-byte swizzle row: kTmaBoxColumns 16-bit elements, or kTmaBoxColumns8Bit
  // 8-bit ones (the FP8 track, docs/spec/fp8-track.md §4.1). An 8-bit d_head of 64 is half a row:
  // its box reaches past d_head, and the TMA unit fills those columns with zeros.
  const int element_size = element_bytes(dtype);
  const int box_columns = element_size == 2 ? kTmaBoxColumns : kTmaBoxColumns8Bit;
  if (element_size != 2 && element_size != 1)
    reject(std::string(dtype_lower_name(dtype)) + " tensors have no map here");
  if (d_head <= 0 || d_head % kTmaBoxColumns != 0)
    reject("d_head " + std::to_string(d_head) + " is not a positive multiple of the " +
           std::to_string(kTmaBoxColumns) + "-column box (of 16-bit elements; half the " +
           std::to_string(kTmaBoxColumns8Bit) + "-column box of 8-bit ones)");
  if (box_rows < 1 || box_rows > kTmaMaxBoxRows)
    reject("a box of " + std::to_string(box_rows) + " rows is outside 1–" +
           std::to_string(kTmaMaxBoxRows));
  if (layout.batch <= 0 || layout.seq_len <= 0 || layout.heads <= 0)
    reject("the tensor is empty (batch " + std::to_string(layout.batch) + ", seq_len " +
           std::to_string(layout.seq_len) + ", heads " + std::to_string(layout.heads) + ")");
  const std::int64_t strides[3] = {layout.head_stride, layout.seq_stride, layout.batch_stride};
  const char* const names[3] = {"head", "sequence", "batch"};
  TensorMapSpec spec;
  spec.data_type = dtype == DType::FP16   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                   : dtype == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                          : CU_TENSOR_MAP_DATA_TYPE_UINT8;
  spec.dims = {static_cast<cuuint64_t>(d_head), static_cast<cuuint64_t>(layout.heads),
               static_cast<cuuint64_t>(layout.seq_len), static_cast<cuuint64_t>(layout.batch)};
  for (int i = 0; i < 3; ++i) {
    const std::int64_t bytes = strides[i] * element_bytes(dtype);
    // TMA reads rows of 16-byte units and encodes strides in 40 bits of 16-byte units.
    if (bytes <= 0 || bytes % 16 != 0 || bytes >= (std::int64_t{1} << 40))
      reject(std::string("the ") + names[i] + " stride of " + std::to_string(bytes) +
             " bytes is not a positive multiple of 16 below 2^40");
    spec.strides_bytes[static_cast<std::size_t>(i)] = static_cast<cuuint64_t>(bytes);
  }
  if (layout.head_stride < d_head)
    reject("the head stride (" + std::to_string(layout.head_stride) +
           " elements) is shorter than d_head = " + std::to_string(d_head));
  spec.box = {static_cast<cuuint32_t>(box_columns), 1, static_cast<cuuint32_t>(box_rows), 1};
  return spec;
}

CUtensorMap encode_tensor_map(const TensorMapSpec& spec, const void* global_address) {
  if (global_address == nullptr || reinterpret_cast<std::uintptr_t>(global_address) % 16 != 0)
    reject("the tensor's address is null or not 16-byte aligned");
  CUtensorMap map{};
  const CUresult result = encode_entry_point()(
      &map, spec.data_type, 4, const_cast<void*>(global_address), spec.dims.data(),
      spec.strides_bytes.data(), spec.box.data(), spec.element_strides.data(),
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS)
    reject("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(result) + " for dims (" +
           std::to_string(spec.dims[0]) + ", " + std::to_string(spec.dims[1]) + ", " +
           std::to_string(spec.dims[2]) + ", " + std::to_string(spec.dims[3]) + ") and box rows " +
           std::to_string(spec.box[2]));
  return map;
}

AttentionTensorMaps make_attention_tensor_maps(const KernelConfig& config, const ForwardArgs& args,
                                               int q_box_rows, int kv_box_rows, int o_box_rows) {
  const TensorMapSpec q = attention_tensor_map_spec(config.dtype, config.d_head, args, q_box_rows);
  const TensorMapSpec kv =
      attention_tensor_map_spec(config.dtype, config.d_head, key_value_layout(args), kv_box_rows);
  const TensorMapSpec o = attention_tensor_map_spec(config.dtype, config.d_head, args, o_box_rows);
  return {encode_tensor_map(q, args.Q), encode_tensor_map(kv, args.K),
          encode_tensor_map(kv, args.V), encode_tensor_map(o, args.O)};
}

}  // namespace flashscope
