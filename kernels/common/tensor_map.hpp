// TMA tensor maps for the Hopper steps (hopper-track.md §3, step 18): each of Q, K, V and O is
// described to the Tensor Memory Accelerator as a 4-D tensor with its real extents, innermost first
// (d_head, heads, seq_len, batch), so a box can never read another head or batch. A box is 64
// columns (128 bytes: one 128-byte swizzle span) × 1 head × `box_rows` rows × 1 sample and lands
// in SMEM as one 64-column sub-tile in the layout wgmma reads (wgmma_descriptor.hpp).
//
// The maps are encoded on the host with cuTensorMapEncodeTiled, reached through
// cudaGetDriverEntryPointByVersion: flashscope never links libcuda.
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <stdexcept>

#include "kernels/common/config.hpp"
#include "kernels/common/forward_args.hpp"

namespace flashscope {

// 64 16-bit elements: the widest box row the 128-byte swizzle allows.
inline constexpr int kTmaBoxColumns = 64;
// 128 8-bit elements (e4m3): the same 128 bytes.
inline constexpr int kTmaBoxColumns8Bit = 128;
inline constexpr int kTmaMaxBoxRows = 256;

struct TensorMapSpec {
  CUtensorMapDataType data_type{};
  std::array<cuuint64_t, 4> dims{};           // d_head, heads, seq_len, batch (elements)
  std::array<cuuint64_t, 3> strides_bytes{};  // of dims 1–3 (dim 0 is contiguous)
  std::array<cuuint32_t, 4> box{};            // 64, 1, box_rows, 1
  std::array<cuuint32_t, 4> element_strides{1, 1, 1, 1};
};

class TensorMapError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The extents and strides (in elements) of one [batch, seq_len, heads, d_head] tensor.
struct AttentionTensorLayout {
  int batch = 0;
  int seq_len = 0;
  int heads = 0;
  std::int64_t batch_stride = 0;
  std::int64_t seq_stride = 0;
  std::int64_t head_stride = 0;
};
AttentionTensorLayout query_layout(const ForwardArgs& args);      // Q and O
AttentionTensorLayout key_value_layout(const ForwardArgs& args);  // K and V (n_kv_heads heads)

// The map of one tensor of `layout`, in boxes of 64 columns x 1 head x `box_rows` rows x 1 sample
// (a step that packs several heads into one box widens `box[1]` before encoding). Throws
// TensorMapError naming the TMA rule a layout or box breaks.
TensorMapSpec attention_tensor_map_spec(DType dtype, int d_head,
                                        const AttentionTensorLayout& layout, int box_rows);
// The same for Q's layout in `args`.
TensorMapSpec attention_tensor_map_spec(DType dtype, int d_head, const ForwardArgs& args,
                                        int box_rows);

// Encodes `spec` for the tensor at `global_address` (16-byte aligned). Throws TensorMapError with
// the driver's error when the entry point is unavailable or the driver rejects the map.
CUtensorMap encode_tensor_map(const TensorMapSpec& spec, const void* global_address);

// The four maps a TMA step's kernel receives as one __grid_constant__ parameter.
struct AttentionTensorMaps {
  CUtensorMap q, k, v, o;
};

// Q boxes of q_box_rows rows, K and V boxes of kv_box_rows (over the K/V layout, which has
// n_kv_heads heads), O boxes of o_box_rows.
AttentionTensorMaps make_attention_tensor_maps(const KernelConfig& config, const ForwardArgs& args,
                                               int q_box_rows, int kv_box_rows, int o_box_rows);

}  // namespace flashscope
