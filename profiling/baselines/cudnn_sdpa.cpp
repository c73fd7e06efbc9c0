// cuDNN SDPA forward and backward through the backend API, descriptors built by hand (no
// cudnn-frontend):
// tensors -> operation(s) -> operation graph -> engine heuristics -> execution plan, then a
// variant pack binding our device pointers for each execution.
#include "profiling/baselines/cudnn_sdpa.hpp"

#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/fp8_reference.hpp"
#include "kernels/common/reference.hpp"

namespace flashscope {

std::string_view cudnn_sdpa_graph_name(CudnnSdpaGraph graph) {
  switch (graph) {
    case CudnnSdpaGraph::unified:
      return "unified";
    case CudnnSdpaGraph::composite:
      return "composite";
    case CudnnSdpaGraph::automatic:
      return "automatic";
  }
  return "?";
}

namespace {

// ---- Status checking --------------------------------------------------------------------------

// A failed cuDNN call. prepare() turns these into BaselineUnavailable when they only mean "this
// graph is not supported here"; elsewhere they propagate as runtime errors.
class CudnnStatusError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// cudnnGetErrorString plus cuDNN's own explanation of the last failure, which is usually what
// says *why* (e.g. which attribute an engine rejected).
std::string describe_status(cudnnStatus_t status) {
  std::string text = cudnnGetErrorString(status);
  std::array<char, 1024> detail{};
  cudnnGetLastErrorString(detail.data(), detail.size());
  if (detail[0] != '\0') text += " (" + std::string(detail.data()) + ")";
  return text;
}

[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const std::string& call, const char* file,
                                    int line) {
  throw CudnnStatusError(std::string(file) + ":" + std::to_string(line) + ": " + call +
                         " failed: " + describe_status(status));
}

#define FS_CUDNN_CHECK(call)                                          \
  do {                                                                \
    const cudnnStatus_t fs_cudnn_status_ = (call);                    \
    if (fs_cudnn_status_ != CUDNN_STATUS_SUCCESS)                     \
      throw_cudnn_error(fs_cudnn_status_, #call, __FILE__, __LINE__); \
  } while (0)

// An attribute id with its spelling, so a failed SetAttribute names the attribute.
struct Attribute {
  cudnnBackendAttributeName_t id;
  const char* name;
};
#define FS_ATTR(attribute) \
  Attribute {              \
    attribute, #attribute  \
  }

// ---- RAII wrappers ----------------------------------------------------------------------------

// One backend descriptor. `label` ("tensor Q", "matmul S = Q K^T", ...) goes into every error.
class BackendDescriptor {
 public:
  BackendDescriptor(cudnnBackendDescriptorType_t type, std::string label)
      : label_(std::move(label)) {
    const cudnnStatus_t status = cudnnBackendCreateDescriptor(type, &descriptor_);
    if (status != CUDNN_STATUS_SUCCESS)
      throw CudnnStatusError("cudnnBackendCreateDescriptor(" + label_ + ", type " +
                             std::to_string(static_cast<int>(type)) +
                             ") failed: " + describe_status(status));
  }
  ~BackendDescriptor() {
    if (descriptor_ != nullptr) cudnnBackendDestroyDescriptor(descriptor_);
  }
  BackendDescriptor(BackendDescriptor&& other) noexcept
      : descriptor_(std::exchange(other.descriptor_, nullptr)), label_(std::move(other.label_)) {}
  BackendDescriptor& operator=(BackendDescriptor&& other) noexcept {
    if (this != &other) {
      if (descriptor_ != nullptr) cudnnBackendDestroyDescriptor(descriptor_);
      descriptor_ = std::exchange(other.descriptor_, nullptr);
      label_ = std::move(other.label_);
    }
    return *this;
  }
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return descriptor_; }
  const std::string& label() const { return label_; }

  void set(Attribute attribute, cudnnBackendAttributeType_t type, std::int64_t count,
           const void* values) {
    const cudnnStatus_t status =
        cudnnBackendSetAttribute(descriptor_, attribute.id, type, count, values);
    if (status != CUDNN_STATUS_SUCCESS)
      throw CudnnStatusError("cudnnBackendSetAttribute(" + label_ + ", " + attribute.name +
                             ") failed: " + describe_status(status));
  }
  void set(Attribute attribute, const BackendDescriptor& value) {
    const cudnnBackendDescriptor_t raw = value.get();
    set(attribute, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
  }
  void set(Attribute attribute, std::span<const cudnnBackendDescriptor_t> values) {
    set(attribute, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<std::int64_t>(values.size()),
        values.data());
  }
  void set(Attribute attribute, std::span<const std::int64_t> values) {
    set(attribute, CUDNN_TYPE_INT64, static_cast<std::int64_t>(values.size()), values.data());
  }
  void set(Attribute attribute, std::int64_t value) { set(attribute, CUDNN_TYPE_INT64, 1, &value); }
  void set(Attribute attribute, bool value) { set(attribute, CUDNN_TYPE_BOOLEAN, 1, &value); }
  void set(Attribute attribute, cudnnDataType_t value) {
    set(attribute, CUDNN_TYPE_DATA_TYPE, 1, &value);
  }
  void set(Attribute attribute, cudnnPointwiseMode_t value) {
    set(attribute, CUDNN_TYPE_POINTWISE_MODE, 1, &value);
  }
  void set(Attribute attribute, cudnnReduceTensorOp_t value) {
    set(attribute, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &value);
  }
  void set(Attribute attribute, cudnnBackendHeurMode_t value) {
    set(attribute, CUDNN_TYPE_HEUR_MODE, 1, &value);
  }
  void set(Attribute attribute, cudnnHandle_t value) {
    set(attribute, CUDNN_TYPE_HANDLE, 1, &value);
  }

  // Reads a scalar int64 attribute (after finalize).
  std::int64_t get_int64(Attribute attribute) const {
    std::int64_t value = 0;
    std::int64_t count = 0;
    const cudnnStatus_t status =
        cudnnBackendGetAttribute(descriptor_, attribute.id, CUDNN_TYPE_INT64, 1, &count, &value);
    if (status != CUDNN_STATUS_SUCCESS)
      throw CudnnStatusError("cudnnBackendGetAttribute(" + label_ + ", " + attribute.name +
                             ") failed: " + describe_status(status));
    return value;
  }

  cudnnStatus_t try_finalize() { return cudnnBackendFinalize(descriptor_); }
  void finalize() {
    const cudnnStatus_t status = try_finalize();
    if (status != CUDNN_STATUS_SUCCESS)
      throw CudnnStatusError("cudnnBackendFinalize(" + label_ +
                             ") failed: " + describe_status(status));
  }

 private:
  cudnnBackendDescriptor_t descriptor_ = nullptr;
  std::string label_;
};

struct HandleDeleter {
  void operator()(cudnnHandle_t handle) const { cudnnDestroy(handle); }
};
using UniqueHandle = std::unique_ptr<std::remove_pointer_t<cudnnHandle_t>, HandleDeleter>;

struct DeviceFree {
  void operator()(void* pointer) const { cudaFree(pointer); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

// ---- Graph construction -----------------------------------------------------------------------

// Unique ids of the tensors the variant pack binds; virtual tensors get ids from 100 up.
enum TensorUid : std::int64_t {
  kUidQ = 1,
  kUidK = 2,
  kUidV = 3,
  kUidO = 4,
  kUidScale = 5,
  kUidMaskFill = 6,  // the causal graph's by-value score for masked keys
  // The backward's (SDPA_BWD): dO and the forward's log-sum-exp in, the gradients out.
  kUidDO = 7,
  kUidStats = 8,
  kUidDQ = 9,
  kUidDK = 10,
  kUidDV = 11,
  // The FP8 forward's (fp8-track.md §3): fp32 descales of Q, K, V and P, scales of P and O, and
  // the amax outputs of P and O.
  kUidDescaleQ = 12,
  kUidDescaleK = 13,
  kUidDescaleV = 14,
  kUidDescaleS = 15,
  kUidScaleS = 16,
  kUidScaleO = 17,
  kUidAmaxS = 18,
  kUidAmaxO = 19,
};

// The score a masked key gets before the softmax: exp(fill - rowmax) is 0. The lowest finite
// float rather than -inf, so no engine forms -inf - (-inf); every causal row keeps its diagonal
// key, so its max is finite anyway.
constexpr float kMaskedScore = std::numeric_limits<float>::lowest();

using Dims = std::array<std::int64_t, 4>;

struct TensorSpec {
  const char* label;
  std::int64_t uid;
  cudnnDataType_t data_type;
  Dims dims;
  Dims strides;
  bool is_virtual = false;
  bool by_value = false;  // a host scalar passed in the variant pack
};

BackendDescriptor make_tensor(const TensorSpec& spec) {
  BackendDescriptor tensor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, std::string("tensor ") + spec.label);
  tensor.set(FS_ATTR(CUDNN_ATTR_TENSOR_DATA_TYPE), spec.data_type);
  tensor.set(FS_ATTR(CUDNN_ATTR_TENSOR_DIMENSIONS), std::span<const std::int64_t>(spec.dims));
  tensor.set(FS_ATTR(CUDNN_ATTR_TENSOR_STRIDES), std::span<const std::int64_t>(spec.strides));
  tensor.set(FS_ATTR(CUDNN_ATTR_TENSOR_UNIQUE_ID), spec.uid);
  // cudaMalloc'd buffers are 256-byte aligned; 16 lets the engines use 128-bit accesses.
  tensor.set(FS_ATTR(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT), std::int64_t{16});
  if (spec.is_virtual) tensor.set(FS_ATTR(CUDNN_ATTR_TENSOR_IS_VIRTUAL), true);
  if (spec.by_value) tensor.set(FS_ATTR(CUDNN_ATTR_TENSOR_IS_BY_VALUE), true);
  tensor.finalize();
  return tensor;
}

cudnnDataType_t cudnn_data_type(DType dtype) {
  return dtype == DType::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
}

std::string_view dtype_label(DType dtype) {
  return dtype == DType::BF16 ? "bf16" : "fp16";
}

// The descriptors of one operation graph. Everything the graph references is kept alive with
// it, since the plan built from it is used for the reference's whole lifetime. A deque, so the
// references keep() hands out stay valid while more parts are added.
struct OperationGraph {
  std::deque<BackendDescriptor> parts;  // tensors, op-level descriptors, operations
  std::vector<cudnnBackendDescriptor_t> operations;
  std::optional<BackendDescriptor> graph;

  const BackendDescriptor& keep(BackendDescriptor descriptor) {
    parts.push_back(std::move(descriptor));
    return parts.back();
  }
  void add_operation(BackendDescriptor operation) {
    operations.push_back(operation.get());
    keep(std::move(operation));
  }
  void finalize(cudnnHandle_t handle) {
    graph.emplace(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
    graph->set(FS_ATTR(CUDNN_ATTR_OPERATIONGRAPH_HANDLE), handle);
    graph->set(FS_ATTR(CUDNN_ATTR_OPERATIONGRAPH_OPS),
               std::span<const cudnnBackendDescriptor_t>(operations));
    graph->finalize();
  }
};

// Strides of the [b, N, h, d] memory seen as the [b, h, rows, cols] tensors cuDNN's attention
// graphs are written in: heads are interleaved within a sequence position. K and V have h_kv heads
// (fewer than Q's for grouped-query attention, which cuDNN's attention graphs take as K/V tensors
// with fewer heads).
struct AttentionLayout {
  Dims qo_dims;               // {b, h, N, d}
  Dims qo_strides;            // {N h d, d, h d, 1}
  Dims kv_dims;               // {b, h_kv, N, d}
  Dims kv_strides;            // {N h_kv d, d, h_kv d, 1}
  Dims k_transposed_dims;     // {b, h_kv, d, N}
  Dims k_transposed_strides;  // {N h_kv d, d, 1, h_kv d}

  explicit AttentionLayout(const Problem& s) {
    const std::int64_t b = s.batch, n = s.seq_len, h = s.heads, h_kv = s.heads_kv, d = s.d_head;
    qo_dims = {b, h, n, d};
    qo_strides = {n * h * d, d, h * d, 1};
    kv_dims = {b, h_kv, n, d};
    kv_strides = {n * h_kv * d, d, h_kv * d, 1};
    k_transposed_dims = {b, h_kv, d, n};
    k_transposed_strides = {n * h_kv * d, d, 1, h_kv * d};
  }
};

const Dims kScalarDims{1, 1, 1, 1};

// One SDPA_FWD operation: Q, K (not transposed), V, O and the scale.
OperationGraph build_unified_graph(cudnnHandle_t handle, const Problem& shape) {
  const AttentionLayout layout(shape);
  const cudnnDataType_t io = cudnn_data_type(shape.dtype);
  OperationGraph g;
  const auto& q = g.keep(make_tensor({"Q", kUidQ, io, layout.qo_dims, layout.qo_strides}));
  const auto& k = g.keep(make_tensor({"K", kUidK, io, layout.kv_dims, layout.kv_strides}));
  const auto& v = g.keep(make_tensor({"V", kUidV, io, layout.kv_dims, layout.kv_strides}));
  const auto& o = g.keep(make_tensor({"O", kUidO, io, layout.qo_dims, layout.qo_strides}));
  const auto& scale = g.keep(
      make_tensor({"scale", kUidScale, CUDNN_DATA_FLOAT, kScalarDims, kScalarDims, false, true}));

  BackendDescriptor sdpa(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, "SDPA forward operation");
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC), q);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC), k);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC), v);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC), o);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC), scale);
  // No STATSDESC: inference mode, the log-sum-exp is neither needed nor written.
  sdpa.finalize();
  g.add_operation(std::move(sdpa));
  g.finalize(handle);
  return g;
}

// One SDPA_BWD operation (backward-track.md §3): Q, K, V, O, dO, the forward's statistics and the
// scale in, dQ, dK, dV out. The statistics are the forward's natural-log row log-sum-exp of the
// scaled scores, fp32 [b, h, N, 1], which is the layout and convention of flashscope's
// softmax_lse ([b, h, N], backward-track.md §1), so the same buffer is bound.
OperationGraph build_unified_backward_graph(cudnnHandle_t handle, const Problem& shape) {
  const AttentionLayout layout(shape);
  const cudnnDataType_t io = cudnn_data_type(shape.dtype);
  const std::int64_t b = shape.batch, n = shape.seq_len, h = shape.heads;
  const Dims stats_dims{b, h, n, 1};
  const Dims stats_strides{h * n, n, 1, 1};
  OperationGraph g;
  const auto& q = g.keep(make_tensor({"Q", kUidQ, io, layout.qo_dims, layout.qo_strides}));
  const auto& k = g.keep(make_tensor({"K", kUidK, io, layout.kv_dims, layout.kv_strides}));
  const auto& v = g.keep(make_tensor({"V", kUidV, io, layout.kv_dims, layout.kv_strides}));
  const auto& o = g.keep(make_tensor({"O", kUidO, io, layout.qo_dims, layout.qo_strides}));
  const auto& d_o = g.keep(make_tensor({"dO", kUidDO, io, layout.qo_dims, layout.qo_strides}));
  const auto& stats =
      g.keep(make_tensor({"stats", kUidStats, CUDNN_DATA_FLOAT, stats_dims, stats_strides}));
  const auto& dq = g.keep(make_tensor({"dQ", kUidDQ, io, layout.qo_dims, layout.qo_strides}));
  const auto& dk = g.keep(make_tensor({"dK", kUidDK, io, layout.kv_dims, layout.kv_strides}));
  const auto& dv = g.keep(make_tensor({"dV", kUidDV, io, layout.kv_dims, layout.kv_strides}));
  const auto& scale = g.keep(
      make_tensor({"scale", kUidScale, CUDNN_DATA_FLOAT, kScalarDims, kScalarDims, false, true}));

  BackendDescriptor sdpa(CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR, "SDPA backward operation");
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC), q);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC), k);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_BWD_VDESC), v);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_BWD_ODESC), o);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_BWD_DODDESC), d_o);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_BWD_STATSDESC), stats);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_BWD_SCALEDESC), scale);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_BWD_DQDESC), dq);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_BWD_DKDESC), dk);
  sdpa.set(FS_ATTR(CUDNN_ATTR_OPERATION_SDPA_BWD_DVDESC), dv);
  sdpa.finalize();
  g.add_operation(std::move(sdpa));
  g.finalize(handle);
  return g;
}

// The pieces of a decomposed attention graph: virtual tensors, matmuls, pointwise operations and
// reductions, each added to `g` (which keeps every descriptor alive). Shared by the 16-bit and the
// FP8 composite graphs, whose softmax and causal mask are the same operations.
class CompositeBuilder {
 public:
  CompositeBuilder(OperationGraph& g, const Problem& shape)
      : g_(g),
        score_dims_{shape.batch, shape.heads, shape.seq_len, shape.seq_len},
        score_strides_{std::int64_t{shape.heads} * shape.seq_len * shape.seq_len,
                       std::int64_t{shape.seq_len} * shape.seq_len, shape.seq_len, 1},
        row_dims_{shape.batch, shape.heads, shape.seq_len, 1},
        row_strides_{std::int64_t{shape.heads} * shape.seq_len, shape.seq_len, 1, 1},
        matmul_fp32_(g.keep([] {
          BackendDescriptor matmul(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul descriptor (fp32)");
          matmul.set(FS_ATTR(CUDNN_ATTR_MATMUL_COMP_TYPE), CUDNN_DATA_FLOAT);
          matmul.finalize();
          return matmul;
        }())) {}

  const BackendDescriptor& virtual_tensor(const char* label, cudnnDataType_t type, const Dims& dims,
                                          const Dims& strides) {
    return g_.keep(make_tensor({label, next_virtual_uid_++, type, dims, strides, true}));
  }
  // A [b, h, N, N] score-shaped or [b, h, N, 1] row-shaped virtual tensor.
  const BackendDescriptor& scores(const char* label, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    return virtual_tensor(label, type, score_dims_, score_strides_);
  }
  const BackendDescriptor& rows(const char* label) {
    return virtual_tensor(label, CUDNN_DATA_FLOAT, row_dims_, row_strides_);
  }

  void matmul(const char* label, const BackendDescriptor& lhs, const BackendDescriptor& rhs,
              const BackendDescriptor& result) {
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, label);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_MATMUL_ADESC), lhs);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_MATMUL_BDESC), rhs);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_MATMUL_CDESC), result);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_MATMUL_DESC), matmul_fp32_);
    op.finalize();
    g_.add_operation(std::move(op));
  }

  void pointwise(const char* label, cudnnPointwiseMode_t mode, const BackendDescriptor& x,
                 const BackendDescriptor* second_operand, const BackendDescriptor& y,
                 cudnnDataType_t precision = CUDNN_DATA_FLOAT) {
    BackendDescriptor mode_descriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR,
                                      std::string(label) + " mode");
    mode_descriptor.set(FS_ATTR(CUDNN_ATTR_POINTWISE_MODE), mode);
    mode_descriptor.set(FS_ATTR(CUDNN_ATTR_POINTWISE_MATH_PREC), precision);
    mode_descriptor.finalize();
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, label);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), mode_descriptor);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_XDESC), x);
    if (second_operand != nullptr)
      op.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_BDESC), *second_operand);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_YDESC), y);
    op.finalize();
    g_.keep(std::move(mode_descriptor));
    g_.add_operation(std::move(op));
  }
  // y = x * factor, the graph's way of applying a scale or descale tensor.
  void multiply(const char* label, const BackendDescriptor& x, const BackendDescriptor& factor,
                const BackendDescriptor& y) {
    pointwise(label, CUDNN_POINTWISE_MUL, x, &factor, y);
  }

  void reduction(const char* label, cudnnReduceTensorOp_t reduce, const BackendDescriptor& x,
                 const BackendDescriptor& y) {
    BackendDescriptor mode(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, std::string(label) + " mode");
    mode.set(FS_ATTR(CUDNN_ATTR_REDUCTION_OPERATOR), reduce);
    mode.set(FS_ATTR(CUDNN_ATTR_REDUCTION_COMP_TYPE), CUDNN_DATA_FLOAT);
    mode.finalize();
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, label);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_XDESC), x);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_YDESC), y);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_DESC), mode);
    op.finalize();
    g_.keep(std::move(mode));
    g_.add_operation(std::move(op));
  }

  // The causal mask as cudnn-frontend's causal diagonal band is before 9.21: row = index along
  // axis 2 (query), col = index along axis 3 (key), keep = row >= col, masked = keep ? s : fill
  // (BINARY_SELECT), the fill a by-value scalar. Returns the masked scores.
  const BackendDescriptor& causal_mask(const BackendDescriptor& s) {
    const auto& fill = g_.keep(make_tensor(
        {"masked score", kUidMaskFill, CUDNN_DATA_FLOAT, kScalarDims, kScalarDims, false, true}));
    const auto& row = scores("row index", CUDNN_DATA_INT32);
    const auto& col = scores("col index", CUDNN_DATA_INT32);
    const auto& keep = scores("row >= col", CUDNN_DATA_BOOLEAN);
    const auto& masked = scores("S masked");
    index("pointwise row index", 2, s, row);
    index("pointwise col index", 3, s, col);
    pointwise("pointwise row >= col", CUDNN_POINTWISE_CMP_GE, row, &col, keep, CUDNN_DATA_BOOLEAN);
    // BINARY_SELECT: y = t ? x : b, the kept score or the fill.
    BackendDescriptor select_mode(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "binary select mode");
    select_mode.set(FS_ATTR(CUDNN_ATTR_POINTWISE_MODE), CUDNN_POINTWISE_BINARY_SELECT);
    select_mode.set(FS_ATTR(CUDNN_ATTR_POINTWISE_MATH_PREC), CUDNN_DATA_FLOAT);
    select_mode.finalize();
    BackendDescriptor select(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                             "pointwise causal select");
    select.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), select_mode);
    select.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_XDESC), s);
    select.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_BDESC), fill);
    select.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_TDESC), keep);
    select.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_YDESC), masked);
    select.finalize();
    g_.keep(std::move(select_mode));
    g_.add_operation(std::move(select));
    return masked;
  }

  // The softmax with its (virtual, unused) statistics branch, the form the fused engines match:
  // m = rowmax(s), e = exp(s - m), l = rowsum(e), stats = m + log(l), p = e / l into `p`.
  void softmax(const BackendDescriptor& s, const BackendDescriptor& p) {
    const auto& row_max = rows("rowmax");
    const auto& shifted = scores("S-rowmax");
    const auto& exps = scores("exp");
    const auto& row_sum = rows("rowsum");
    const auto& log_sum = rows("log(rowsum)");
    const auto& stats = rows("stats");
    reduction("reduction rowmax", CUDNN_REDUCE_TENSOR_MAX, s, row_max);
    pointwise("pointwise S - rowmax", CUDNN_POINTWISE_SUB, s, &row_max, shifted);
    pointwise("pointwise exp", CUDNN_POINTWISE_EXP, shifted, nullptr, exps);
    reduction("reduction rowsum", CUDNN_REDUCE_TENSOR_ADD, exps, row_sum);
    pointwise("pointwise log(rowsum)", CUDNN_POINTWISE_LOG, row_sum, nullptr, log_sum);
    pointwise("pointwise stats", CUDNN_POINTWISE_ADD, row_max, &log_sum, stats);
    pointwise("pointwise P = exp / rowsum", CUDNN_POINTWISE_DIV, exps, &row_sum, p);
  }

 private:
  // Generates the query (axis 2) or key (axis 3) index of every score.
  void index(const char* label, std::int64_t axis, const BackendDescriptor& s,
             const BackendDescriptor& result) {
    BackendDescriptor mode_descriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR,
                                      std::string(label) + " mode");
    mode_descriptor.set(FS_ATTR(CUDNN_ATTR_POINTWISE_MODE), CUDNN_POINTWISE_GEN_INDEX);
    mode_descriptor.set(FS_ATTR(CUDNN_ATTR_POINTWISE_MATH_PREC), CUDNN_DATA_INT32);
    mode_descriptor.set(FS_ATTR(CUDNN_ATTR_POINTWISE_AXIS), axis);
    mode_descriptor.finalize();
    BackendDescriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, label);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), mode_descriptor);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_XDESC), s);
    op.set(FS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_YDESC), result);
    op.finalize();
    g_.keep(std::move(mode_descriptor));
    g_.add_operation(std::move(op));
  }

  OperationGraph& g_;
  Dims score_dims_, score_strides_, row_dims_, row_strides_;
  const BackendDescriptor& matmul_fp32_;
  std::int64_t next_virtual_uid_ = 100;  // virtual tensors' ids, clear of the bound tensors'
};

// The decomposed graph cuDNN's fused flash-attention engine pattern-matches:
//   S = Q K^T (fp32) -> S * scale -> m = rowmax -> e = exp(S - m) -> l = rowsum(e)
//   -> stats = m + log(l) (virtual, unused) -> P = e / l (in the io dtype) -> O = P V.
// This is the graph cudnn-frontend builds for inference before cuDNN 9.21, the virtual stats
// branch included, so it is the form those engines are known to accept. The causal problem
// puts the mask between the scale and the softmax (CompositeBuilder::causal_mask).
OperationGraph build_composite_graph(cudnnHandle_t handle, const Problem& shape) {
  const AttentionLayout layout(shape);
  const cudnnDataType_t io = cudnn_data_type(shape.dtype);
  OperationGraph g;
  const auto& q = g.keep(make_tensor({"Q", kUidQ, io, layout.qo_dims, layout.qo_strides}));
  const auto& k_t = g.keep(
      make_tensor({"K^T", kUidK, io, layout.k_transposed_dims, layout.k_transposed_strides}));
  const auto& v = g.keep(make_tensor({"V", kUidV, io, layout.kv_dims, layout.kv_strides}));
  const auto& o = g.keep(make_tensor({"O", kUidO, io, layout.qo_dims, layout.qo_strides}));
  const auto& scale = g.keep(
      make_tensor({"scale", kUidScale, CUDNN_DATA_FLOAT, kScalarDims, kScalarDims, false, true}));

  CompositeBuilder b(g, shape);
  const auto& s = b.scores("S");
  const auto& s_scaled = b.scores("S*scale");
  // The second matmul's A operand must be in the io dtype.
  const auto& p = b.scores("P", io);
  b.matmul("matmul S = Q K^T", q, k_t, s);
  b.multiply("pointwise S * scale", s, scale, s_scaled);
  b.softmax(shape.causal ? b.causal_mask(s_scaled) : s_scaled, p);
  b.matmul("matmul O = P V", p, v, o);
  g.finalize(handle);
  return g;
}

// How the FP8 graph takes the e4m3 inputs' descales (fp8-track.md §1 has one per sample and
// head). cuDNN documents (1, 1, 1, 1) descale tensors for its FP8 attention; a per-head tensor is
// tried first since it is the inputs' own granularity, and the per-tensor form takes the
// harness's inputs only where every (sample, head) shares one descale (run_e4m3 checks it).
enum class DescaleGranularity { per_head, per_tensor };

std::string_view granularity_name(DescaleGranularity granularity) {
  return granularity == DescaleGranularity::per_head ? "per_head" : "per_tensor";
}

// cuDNN's FP8 attention forward as cudnn-frontend's sdpa_fp8 node decomposes it (the backend
// headers' unified SDPA_FWD operation has no FP8 attributes in 9.19), fp8-track.md §3:
//   S = Q K^T (e4m3 in, fp32) -> * softmax scale -> * descale_q -> * descale_k -> [causal mask]
//   -> softmax as in the 16-bit graph -> amax_s = amax(P) -> P8 = P * scale_s (e4m3)
//   -> O32 = P8 V (fp32) -> * descale_s -> * descale_v -> amax_o = amax -> O = * scale_o (e4m3).
// scale_s is 2^8 and descale_s 2^-8, the scaling of step 28 (fp8-track.md §4.1). O is e4m3: cuDNN
// 9.19 refuses a bf16 O for FP8 inputs on Hopper ("FP8 input with F16 output is only supported on
// Blackwell", its log says), so scale_o is 1 / V's largest descale (bind_fp8) and the harness
// reads O back as descale_o x O in bf16 (deliver_e4m3_output). amax_s and amax_o are written to
// a buffer of the baseline's and never read: the harness's scales come from its quantizer, not
// from a previous step's amax.
OperationGraph build_fp8_composite_graph(cudnnHandle_t handle, const Problem& shape,
                                         DescaleGranularity granularity) {
  const AttentionLayout layout(shape);
  const cudnnDataType_t e4m3 = CUDNN_DATA_FP8_E4M3;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  OperationGraph g;
  const auto& q = g.keep(make_tensor({"Q", kUidQ, e4m3, layout.qo_dims, layout.qo_strides}));
  const auto& k_t = g.keep(
      make_tensor({"K^T", kUidK, e4m3, layout.k_transposed_dims, layout.k_transposed_strides}));
  const auto& v = g.keep(make_tensor({"V", kUidV, e4m3, layout.kv_dims, layout.kv_strides}));
  const auto& o = g.keep(make_tensor({"O", kUidO, e4m3, layout.qo_dims, layout.qo_strides}));
  const auto& scale =
      g.keep(make_tensor({"scale", kUidScale, f32, kScalarDims, kScalarDims, false, true}));
  const auto descale = [&](const char* label, std::int64_t uid, std::int64_t heads) {
    if (granularity == DescaleGranularity::per_tensor)
      return std::cref(g.keep(make_tensor({label, uid, f32, kScalarDims, kScalarDims})));
    const Dims dims{shape.batch, heads, 1, 1};
    const Dims strides{heads, 1, 1, 1};
    return std::cref(g.keep(make_tensor({label, uid, f32, dims, strides})));
  };
  const BackendDescriptor& descale_q = descale("descale_q", kUidDescaleQ, shape.heads);
  const BackendDescriptor& descale_k = descale("descale_k", kUidDescaleK, shape.heads_kv);
  const BackendDescriptor& descale_v = descale("descale_v", kUidDescaleV, shape.heads_kv);
  const auto scalar = [&](const char* label, std::int64_t uid) -> const BackendDescriptor& {
    return g.keep(make_tensor({label, uid, f32, kScalarDims, kScalarDims}));
  };
  const auto& descale_s = scalar("descale_s", kUidDescaleS);
  const auto& scale_s = scalar("scale_s", kUidScaleS);
  const auto& scale_o = scalar("scale_o", kUidScaleO);
  const auto& amax_s = scalar("amax_s", kUidAmaxS);
  const auto& amax_o = scalar("amax_o", kUidAmaxO);

  CompositeBuilder b(g, shape);
  const auto& s = b.scores("S");
  const auto& s_scaled = b.scores("S*scale");
  const auto& s_q = b.scores("S*descale_q");
  const auto& s_qk = b.scores("S*descale_k");
  const auto& p = b.scores("P");
  const auto& p_scaled = b.scores("P*scale_s (e4m3)", e4m3);
  // The second matmul's fp32 result is packed [b, h, N, d], as cudnn-frontend infers it; only O
  // itself has the interleaved layout of our buffers.
  const std::int64_t n = shape.seq_len, d = shape.d_head;
  const Dims packed_strides{shape.heads * n * d, n * d, d, 1};
  const auto& o32 = b.virtual_tensor("P V", f32, layout.qo_dims, packed_strides);
  const auto& o_s = b.virtual_tensor("P V * descale_s", f32, layout.qo_dims, packed_strides);
  const auto& o_sv = b.virtual_tensor("P V * descale_v", f32, layout.qo_dims, packed_strides);

  b.matmul("matmul S = Q K^T", q, k_t, s);
  b.multiply("pointwise S * scale", s, scale, s_scaled);
  b.multiply("pointwise S * descale_q", s_scaled, descale_q, s_q);
  b.multiply("pointwise S * descale_k", s_q, descale_k, s_qk);
  b.softmax(shape.causal ? b.causal_mask(s_qk) : s_qk, p);
  b.reduction("reduction amax_s", CUDNN_REDUCE_TENSOR_AMAX, p, amax_s);
  b.multiply("pointwise P * scale_s", p, scale_s, p_scaled);
  b.matmul("matmul O = P V", p_scaled, v, o32);
  b.multiply("pointwise O * descale_s", o32, descale_s, o_s);
  b.multiply("pointwise O * descale_v", o_s, descale_v, o_sv);
  b.multiply("pointwise O * scale_o", o_sv, scale_o, o);
  b.reduction("reduction amax_o", CUDNN_REDUCE_TENSOR_AMAX, o_sv, amax_o);
  g.finalize(handle);
  return g;
}

// The first engine configuration, in heuristic order, that finalizes into an execution plan
// (what cudnn-frontend's default policy does). Throws CudnnStatusError listing what was tried.
struct ChosenPlan {
  BackendDescriptor plan;
  std::int64_t engine_index;
  std::int64_t workspace_bytes;
};

ChosenPlan choose_plan(cudnnHandle_t handle, const BackendDescriptor& graph) {
  std::string rejected;
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    const char* mode_name = mode == CUDNN_HEUR_MODE_A ? "heuristics mode A" : "fallback heuristics";
    BackendDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, mode_name);
    heuristics.set(FS_ATTR(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH), graph);
    heuristics.set(FS_ATTR(CUDNN_ATTR_ENGINEHEUR_MODE), mode);
    if (const cudnnStatus_t status = heuristics.try_finalize(); status != CUDNN_STATUS_SUCCESS) {
      rejected += std::string("; ") + mode_name + ": " + describe_status(status);
      continue;
    }
    std::int64_t available = 0;
    FS_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &available, nullptr));
    std::vector<BackendDescriptor> configs;
    std::vector<cudnnBackendDescriptor_t> raw_configs;
    for (std::int64_t i = 0; i < available; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                           std::string(mode_name) + " engine config " + std::to_string(i));
      raw_configs.push_back(configs.back().get());
    }
    std::int64_t returned = 0;
    if (available > 0)
      FS_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, available, &returned,
                                              raw_configs.data()));
    if (returned == 0) rejected += std::string("; ") + mode_name + ": no engine proposed";

    for (std::int64_t i = 0; i < returned; ++i) {
      BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine of " + configs[i].label());
      cudnnBackendDescriptor_t raw_engine = engine.get();
      std::int64_t engine_count = 0;
      FS_CUDNN_CHECK(cudnnBackendGetAttribute(configs[i].get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine_count,
                                              &raw_engine));
      const std::int64_t engine_index = engine.get_int64(FS_ATTR(CUDNN_ATTR_ENGINE_GLOBAL_INDEX));

      BackendDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
                             "execution plan (engine " + std::to_string(engine_index) + ")");
      plan.set(FS_ATTR(CUDNN_ATTR_EXECUTION_PLAN_HANDLE), handle);
      plan.set(FS_ATTR(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG), configs[i]);
      if (const cudnnStatus_t status = plan.try_finalize(); status != CUDNN_STATUS_SUCCESS) {
        rejected += "; engine " + std::to_string(engine_index) + ": " + describe_status(status);
        continue;
      }
      const std::int64_t workspace =
          plan.get_int64(FS_ATTR(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE));
      return {std::move(plan), engine_index, workspace};
    }
  }
  throw CudnnStatusError("no engine builds an execution plan" + rejected);
}

std::string version_text(std::size_t version) {
  // 9.x encodes major * 10000 + minor * 100 + patch.
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

// ---- The reference ----------------------------------------------------------------------------

class CudnnSdpaBaseline final : public BaselineAttention {
 public:
  explicit CudnnSdpaBaseline(CudnnSdpaGraph graph) : requested_graph_(graph) {}

  std::string_view name() const override { return "cudnn"; }

  std::string version() const override { return "cuDNN " + version_text(cudnnGetVersion()); }

  std::string description() const override {
    std::string text = version();
    if (cudnnGetVersion() != CUDNN_VERSION)
      text += " (headers " + version_text(CUDNN_VERSION) + ")";
    text += backward_ ? " SDPA backward, backend API"
                      : (fp8_ ? " FP8 SDPA forward (e4m3 in and out), backend API"
                              : " SDPA forward, backend API");
    if (!plan_) return text + ", not prepared";
    if (fp8_)
      text += ", " + std::string(granularity_name(granularity_)) +
              " descales, scale_s 2^8, descale_s 2^-8, O e4m3 with scale_o 1 / max V descale "
              "(read back as bf16 after the checked launch only), amax_s and amax_o discarded";
    text += ", " + std::string(cudnn_sdpa_graph_name(built_graph_)) + " graph, engine " +
            std::to_string(engine_index_) + ", workspace " + std::to_string(workspace_bytes_) +
            " B";
    return text;
  }

  // FP8: "fp8_composite_per_head" or "fp8_composite_per_tensor", the descales' granularity.
  std::string variant() const override {
    if (!plan_) return std::string();
    if (fp8_) return "fp8_composite_" + std::string(granularity_name(granularity_));
    return std::string(cudnn_sdpa_graph_name(built_graph_));
  }

  void prepare(const Problem& shape) override {
    release_plan();
    if (const auto violation = problem_violation(shape))
      throw BaselineUnavailable("cuDNN SDPA: " + *violation);
    fp8_ = needs_descales(shape.dtype);
    if (fp8_ && shape.dtype != DType::E4M3)
      throw BaselineUnavailable("cuDNN SDPA here runs fp16, bf16 and e4m3 inputs only, not " +
                                std::string(dtype_lower_name(shape.dtype)));
    // The fused engines' documented head-dimension range: a multiple of 8 (16 for FP8) up to 256.
    const int d_multiple = fp8_ ? 16 : 8;
    if (shape.d_head % d_multiple != 0 || shape.d_head > 256)
      throw BaselineUnavailable("cuDNN SDPA " + std::string(fp8_ ? "FP8 " : "") +
                                "supports d_head a multiple of " + std::to_string(d_multiple) +
                                " up to 256, not " + std::to_string(shape.d_head));
    // A handle belongs to the device current when it was created. Both passes need it (the
    // backward's graph was first built before it existed: an H100 run refused every backward
    // plan with CUDNN_STATUS_BAD_PARAM_NULL_POINTER on CUDNN_ATTR_OPERATIONGRAPH_HANDLE).
    int device = 0;
    FS_CUDA_CHECK(cudaGetDevice(&device));
    if (!handle_ || handle_device_ != device) {
      cudnnHandle_t raw = nullptr;
      FS_CUDNN_CHECK(cudnnCreate(&raw));
      handle_.reset(raw);
      handle_device_ = device;
    }
    backward_ = shape.pass == Pass::backward;
    if (backward_) {
      if (fp8_)
        throw BaselineUnavailable(
            "cuDNN SDPA: flashscope builds cuDNN's FP8 forward graph only, not its FP8 backward");
      prepare_backward(shape);
      return;
    }
    if (fp8_) {
      prepare_fp8(shape, device);
      return;
    }

    // The unified SDPA_FWD operation of the cuDNN headers built against has no causal attribute
    // (cudnn-frontend adds the mask as a separate diagonal band operation from cuDNN 9.21), so
    // the causal problem is described by the composite graph with the mask in it.
    if (shape.causal && requested_graph_ == CudnnSdpaGraph::unified)
      throw BaselineUnavailable(
          "cuDNN SDPA: the unified graph has no causal mask here; the composite graph has it");
    std::vector<CudnnSdpaGraph> candidates;
    if (requested_graph_ == CudnnSdpaGraph::automatic) {
      constexpr std::size_t kFirstUnifiedVersion = 91301;  // cudnn-frontend's threshold too
      if (cudnnGetVersion() >= kFirstUnifiedVersion && !shape.causal)
        candidates.push_back(CudnnSdpaGraph::unified);
      candidates.push_back(CudnnSdpaGraph::composite);
    } else {
      candidates.push_back(requested_graph_);
    }

    std::string reasons;
    for (const CudnnSdpaGraph candidate : candidates) {
      try {
        OperationGraph graph = candidate == CudnnSdpaGraph::unified
                                   ? build_unified_graph(handle_.get(), shape)
                                   : build_composite_graph(handle_.get(), shape);
        ChosenPlan chosen = choose_plan(handle_.get(), *graph.graph);
        DeviceBuffer workspace;
        if (chosen.workspace_bytes > 0) {
          void* raw = nullptr;
          FS_CUDA_CHECK(cudaMalloc(&raw, static_cast<std::size_t>(chosen.workspace_bytes)));
          workspace.reset(raw);
        }
        graph_ = std::move(graph);
        workspace_ = std::move(workspace);
        plan_.emplace(std::move(chosen.plan));
        engine_index_ = chosen.engine_index;
        workspace_bytes_ = chosen.workspace_bytes;
        built_graph_ = candidate;
        break;
      } catch (const CudnnStatusError& error) {
        reasons +=
            "\n  " + std::string(cudnn_sdpa_graph_name(candidate)) + " graph: " + error.what();
      }
    }
    if (!plan_) {
      throw BaselineUnavailable("cuDNN " + version_text(cudnnGetVersion()) +
                                " has no SDPA forward plan for " + shape_text(shape) + " " +
                                std::string(dtype_label(shape.dtype)) + ":" + reasons);
    }
    // The scale is a by-value tensor: the variant pack points at this host float (and the
    // causal graph's fill value at mask_fill_).
    scale_ = 1.0f / std::sqrt(static_cast<float>(shape.d_head));
    causal_ = shape.causal;
  }

  void run_e4m3(const void* q, const void* k, const void* v, void* o,
                const BaselineDescales& descales, cudaStream_t stream) override {
    if (!plan_ || !fp8_)
      throw std::logic_error("cuDNN SDPA: run_e4m3() before a successful e4m3 prepare()");
    const std::array<const void*, 7> pointers{q, k, v, o, descales.q, descales.k, descales.v};
    // Binding reads the descales back (per-tensor graph): only when the buffers change, which
    // the harness does in its untimed checked launch, never between timed launches.
    if (!variant_pack_ || pointers != bound_fp8_pointers_) bind_fp8(pointers, stream);
    FS_CUDNN_CHECK(cudnnSetStream(handle_.get(), stream));
    FS_CUDNN_CHECK(cudnnBackendExecute(handle_.get(), plan_->get(), variant_pack_->get()));
  }

  // O = descale_o x the e4m3 O of the last run, rounded to bf16 (fp8-track.md §3: cuDNN's own O
  // precision is what its row's check and error columns judge).
  void deliver_e4m3_output(void* o, cudaStream_t stream) override {
    if (!plan_ || !fp8_)
      throw std::logic_error("cuDNN SDPA: deliver_e4m3_output() before an e4m3 prepare()");
    dequantize_e4m3_to_bf16(o_fp8_.get(), descale_o_, o, fp8_shape_.query_elements(), stream);
  }

  void run_backward(const BaselineBackwardBuffers& buffers, cudaStream_t stream) override {
    if (!plan_ || !backward_)
      throw std::logic_error("cuDNN SDPA: run_backward() before a successful backward prepare()");
    const std::array<const void*, 9> pointers{buffers.q,  buffers.k,   buffers.v,
                                              buffers.o,  buffers.d_o, buffers.lse,
                                              buffers.dq, buffers.dk,  buffers.dv};
    if (!variant_pack_ || pointers != bound_backward_pointers_) bind_backward(pointers);
    FS_CUDNN_CHECK(cudnnSetStream(handle_.get(), stream));
    FS_CUDNN_CHECK(cudnnBackendExecute(handle_.get(), plan_->get(), variant_pack_->get()));
  }

  void run(const void* q, const void* k, const void* v, void* o, cudaStream_t stream) override {
    if (!plan_ || backward_ || fp8_)
      throw std::logic_error("cuDNN SDPA reference: run() before a successful 16-bit prepare()");
    const std::array<const void*, 4> pointers{q, k, v, o};
    // Rebuilding the variant pack costs host time between the caller's events; reuse it while
    // the buffers stay the same (the usual case when timing repeated runs).
    if (!variant_pack_ || pointers != bound_pointers_) bind(pointers);
    FS_CUDNN_CHECK(cudnnSetStream(handle_.get(), stream));
    FS_CUDNN_CHECK(cudnnBackendExecute(handle_.get(), plan_->get(), variant_pack_->get()));
  }

 private:
  static std::string shape_text(const Problem& s) {
    return "[b=" + std::to_string(s.batch) + ", N=" + std::to_string(s.seq_len) +
           ", h=" + std::to_string(s.heads) +
           (s.grouped() ? ", h_kv=" + std::to_string(s.heads_kv) : std::string()) +
           ", d=" + std::to_string(s.d_head) + "]" + (s.causal ? " causal" : "");
  }

  // cuDNN's FP8 forward (fp8-track.md §3): the composite graph of build_fp8_composite_graph, with
  // per-head descale tensors if an engine takes them, else per-tensor ones.
  void prepare_fp8(const Problem& shape, int device) {
    int major = 0;
    FS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (major < 9)
      throw BaselineUnavailable("cuDNN's FP8 attention needs sm_90 or newer; this GPU is sm_" +
                                std::to_string(major) + "x");
    std::vector<DescaleGranularity> candidates;
    // Per-head descales of K and V broadcast over the query heads only without grouping.
    if (!shape.grouped() && !per_head_refused_) candidates.push_back(DescaleGranularity::per_head);
    candidates.push_back(DescaleGranularity::per_tensor);
    std::string reasons;
    for (const DescaleGranularity candidate : candidates) {
      try {
        OperationGraph graph = build_fp8_composite_graph(handle_.get(), shape, candidate);
        ChosenPlan chosen = choose_plan(handle_.get(), *graph.graph);
        DeviceBuffer workspace;
        if (chosen.workspace_bytes > 0) {
          void* raw = nullptr;
          FS_CUDA_CHECK(cudaMalloc(&raw, static_cast<std::size_t>(chosen.workspace_bytes)));
          workspace.reset(raw);
        }
        graph_ = std::move(graph);
        workspace_ = std::move(workspace);
        plan_.emplace(std::move(chosen.plan));
        engine_index_ = chosen.engine_index;
        workspace_bytes_ = chosen.workspace_bytes;
        built_graph_ = CudnnSdpaGraph::composite;
        granularity_ = candidate;
        break;
      } catch (const CudnnStatusError& error) {
        reasons += "\n  FP8 composite graph, " + std::string(granularity_name(candidate)) +
                   " descales: " + error.what();
        // Which descale shapes the engines take does not change between problems: ask once.
        if (candidate == DescaleGranularity::per_head) {
          per_head_refused_ = true;
          // Its first line names the refusal; the rest lists every engine tried.
          const std::string what = error.what();
          per_head_reason_ = what.substr(0, std::min(what.find('\n'), std::size_t{300}));
        }
      }
    }
    if (!plan_)
      throw BaselineUnavailable("cuDNN " + version_text(cudnnGetVersion()) +
                                " has no FP8 SDPA forward plan for " + shape_text(shape) +
                                " e4m3:" + reasons);
    // Device scalars, one per kFp8ScalarStride floats (every tensor is declared 16-byte
    // aligned): scale_s, descale_s, scale_o, then the two amax outputs (never read).
    if (!fp8_scalars_) {
      void* raw = nullptr;
      FS_CUDA_CHECK(cudaMalloc(&raw, kFp8Scalars * kFp8ScalarStride * sizeof(float)));
      fp8_scalars_.reset(raw);
      std::array<float, kFp8Scalars * kFp8ScalarStride> values{};
      values[0 * kFp8ScalarStride] = static_cast<float>(fp8::kProbabilityScale);
      values[1 * kFp8ScalarStride] = static_cast<float>(1.0 / fp8::kProbabilityScale);
      values[2 * kFp8ScalarStride] = 1.0f;  // scale_o: set from V's descales in bind_fp8
      FS_CUDA_CHECK(cudaMemcpy(raw, values.data(), sizeof values, cudaMemcpyHostToDevice));
    }
    // O in e4m3 (the Hopper engines write no other O for FP8 inputs), one byte per element.
    const auto o_bytes = static_cast<std::size_t>(shape.query_elements());
    if (o_fp8_bytes_ < o_bytes) {
      o_fp8_.reset();
      void* raw = nullptr;
      FS_CUDA_CHECK(cudaMalloc(&raw, o_bytes));
      o_fp8_.reset(raw);
      o_fp8_bytes_ = o_bytes;
    }
    scale_ = 1.0f / std::sqrt(static_cast<float>(shape.d_head));
    causal_ = shape.causal;
    fp8_shape_ = shape;
  }

  // The per-tensor graph reads one descale per tensor: the first of each [batch, heads] array,
  // after checking that every (sample, head) has that same value, so that the graph computes the
  // very problem the inputs describe. Anything else is refused with the values' spread. O's scale
  // comes from V's descales: O is a convex combination of V's rows, so |O| <= 448 x the largest V
  // descale, and scale_o = 1 / that descale puts O in e4m3's range without saturating it.
  void bind_fp8(const std::array<const void*, 7>& pointers, cudaStream_t stream) {
    const auto download = [&](const void* device, std::int64_t count) {
      std::vector<float> values(static_cast<std::size_t>(count));
      FS_CUDA_CHECK(cudaMemcpyAsync(values.data(), device, sizeof(float) * values.size(),
                                    cudaMemcpyDeviceToHost, stream));
      FS_CUDA_CHECK(cudaStreamSynchronize(stream));
      return values;
    };
    const Problem& s = fp8_shape_;
    const std::vector<float> v_descales = download(pointers[6], std::int64_t{s.batch} * s.heads_kv);
    if (granularity_ == DescaleGranularity::per_tensor) {
      const auto check_uniform = [&](const std::vector<float>& values, const char* name) {
        const auto [low, high] = std::minmax_element(values.begin(), values.end());
        if (*low != *high)
          throw BaselineUnavailable(
              std::string("cuDNN ") + version_text(cudnnGetVersion()) +
              " FP8 SDPA takes one descale per tensor (its per-head descale graph has no plan" +
              (per_head_reason_.empty() ? std::string() : ": " + per_head_reason_) +
              "), and these inputs' " + name + " descales differ between (sample, head) pairs (" +
              std::to_string(*low) + " to " + std::to_string(*high) + ")");
      };
      check_uniform(download(pointers[4], std::int64_t{s.batch} * s.heads), "Q");
      check_uniform(download(pointers[5], std::int64_t{s.batch} * s.heads_kv), "K");
      check_uniform(v_descales, "V");
    }
    const float largest_v = *std::max_element(v_descales.begin(), v_descales.end());
    descale_o_ = largest_v > 0.f ? largest_v : 1.f;
    const float scale_o = 1.0f / descale_o_;
    FS_CUDA_CHECK(cudaMemcpyAsync(static_cast<float*>(fp8_scalars_.get()) + 2 * kFp8ScalarStride,
                                  &scale_o, sizeof scale_o, cudaMemcpyHostToDevice, stream));
    FS_CUDA_CHECK(cudaStreamSynchronize(stream));
    auto* scalars = static_cast<float*>(fp8_scalars_.get());
    std::vector<std::int64_t> uids{
        kUidQ,        kUidK,      kUidV,        kUidO,      kUidScale, kUidDescaleQ, kUidDescaleK,
        kUidDescaleV, kUidScaleS, kUidDescaleS, kUidScaleO, kUidAmaxS, kUidAmaxO};
    // cuDNN takes non-const pointers; it only reads the inputs and the descales.
    std::vector<void*> data;
    for (const void* pointer : pointers)
      data.push_back(const_cast<void*>(pointer));
    data[3] = o_fp8_.get();  // cuDNN writes e4m3 O here; deliver_e4m3_output converts it
    data.insert(data.begin() + 4, &scale_);
    for (std::size_t i = 0; i < kFp8Scalars; ++i)
      data.push_back(scalars + i * kFp8ScalarStride);
    if (causal_) {
      uids.push_back(kUidMaskFill);
      data.push_back(&mask_fill_);
    }
    void* workspace = workspace_.get();
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack (FP8)");
    pack.set(FS_ATTR(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS), std::span<const std::int64_t>(uids));
    pack.set(FS_ATTR(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS), CUDNN_TYPE_VOID_PTR,
             static_cast<std::int64_t>(data.size()), data.data());
    pack.set(FS_ATTR(CUDNN_ATTR_VARIANT_PACK_WORKSPACE), CUDNN_TYPE_VOID_PTR, 1, &workspace);
    pack.finalize();
    variant_pack_.emplace(std::move(pack));
    bound_fp8_pointers_ = pointers;
  }

  // The backward: the unified SDPA_BWD operation only. Its descriptor in these headers has no
  // causal attribute, and the decomposed backward graph the older engines match (cudnn-frontend's,
  // dozens of operations) is not built here, so the causal backward is refused by name.
  void prepare_backward(const Problem& shape) {
    if (shape.causal)
      throw BaselineUnavailable(
          "cuDNN SDPA backward: the unified SDPA_BWD operation has no causal mask in cuDNN " +
          version_text(CUDNN_VERSION) +
          "'s headers, and flashscope does not build the decomposed causal backward graph");
    try {
      OperationGraph graph = build_unified_backward_graph(handle_.get(), shape);
      ChosenPlan chosen = choose_plan(handle_.get(), *graph.graph);
      DeviceBuffer workspace;
      if (chosen.workspace_bytes > 0) {
        void* raw = nullptr;
        FS_CUDA_CHECK(cudaMalloc(&raw, static_cast<std::size_t>(chosen.workspace_bytes)));
        workspace.reset(raw);
      }
      graph_ = std::move(graph);
      workspace_ = std::move(workspace);
      plan_.emplace(std::move(chosen.plan));
      engine_index_ = chosen.engine_index;
      workspace_bytes_ = chosen.workspace_bytes;
      built_graph_ = CudnnSdpaGraph::unified;
    } catch (const CudnnStatusError& error) {
      throw BaselineUnavailable("cuDNN " + version_text(cudnnGetVersion()) +
                                " has no SDPA backward plan for " + shape_text(shape) + " " +
                                std::string(dtype_label(shape.dtype)) + ": " + error.what());
    }
    scale_ = 1.0f / std::sqrt(static_cast<float>(shape.d_head));
    causal_ = false;
  }

  void bind_backward(const std::array<const void*, 9>& pointers) {
    const std::vector<std::int64_t> uids{kUidQ,     kUidK,  kUidV,  kUidO,  kUidDO,
                                         kUidStats, kUidDQ, kUidDK, kUidDV, kUidScale};
    // cuDNN takes non-const pointers; it only reads Q, K, V, O, dO and the statistics.
    std::vector<void*> data;
    for (const void* pointer : pointers)
      data.push_back(const_cast<void*>(pointer));
    data.push_back(&scale_);
    void* workspace = workspace_.get();
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack (backward)");
    pack.set(FS_ATTR(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS), std::span<const std::int64_t>(uids));
    pack.set(FS_ATTR(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS), CUDNN_TYPE_VOID_PTR,
             static_cast<std::int64_t>(data.size()), data.data());
    pack.set(FS_ATTR(CUDNN_ATTR_VARIANT_PACK_WORKSPACE), CUDNN_TYPE_VOID_PTR, 1, &workspace);
    pack.finalize();
    variant_pack_.emplace(std::move(pack));
    bound_backward_pointers_ = pointers;
  }

  void release_plan() {
    bound_fp8_pointers_ = {};
    bound_backward_pointers_ = {};
    bound_pointers_ = {};
    variant_pack_.reset();
    plan_.reset();
    graph_.reset();
    workspace_.reset();
    workspace_bytes_ = 0;
    engine_index_ = -1;
  }

  void bind(const std::array<const void*, 4>& pointers) {
    std::vector<std::int64_t> uids{kUidQ, kUidK, kUidV, kUidO, kUidScale};
    // cuDNN takes non-const pointers; it only reads Q, K and V.
    std::vector<void*> data{const_cast<void*>(pointers[0]), const_cast<void*>(pointers[1]),
                            const_cast<void*>(pointers[2]), const_cast<void*>(pointers[3]),
                            &scale_};
    if (causal_) {  // the fill value exists only in the causal graph
      uids.push_back(kUidMaskFill);
      data.push_back(&mask_fill_);
    }
    void* workspace = workspace_.get();
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
    pack.set(FS_ATTR(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS), std::span<const std::int64_t>(uids));
    pack.set(FS_ATTR(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS), CUDNN_TYPE_VOID_PTR,
             static_cast<std::int64_t>(data.size()), data.data());
    pack.set(FS_ATTR(CUDNN_ATTR_VARIANT_PACK_WORKSPACE), CUDNN_TYPE_VOID_PTR, 1, &workspace);
    pack.finalize();
    variant_pack_.emplace(std::move(pack));
    bound_pointers_ = pointers;
  }

  CudnnSdpaGraph requested_graph_;
  UniqueHandle handle_;
  int handle_device_ = -1;

  std::optional<OperationGraph> graph_;
  std::optional<BackendDescriptor> plan_;
  CudnnSdpaGraph built_graph_ = CudnnSdpaGraph::automatic;
  std::int64_t engine_index_ = -1;
  std::int64_t workspace_bytes_ = 0;
  DeviceBuffer workspace_;
  float scale_ = 1.0f;
  bool causal_ = false;
  float mask_fill_ = kMaskedScore;

  bool backward_ = false;  // prepared for a backward problem (run_backward)

  // e4m3 problems (run_e4m3): the descale granularity of the graph built, whether the per-head
  // graph found no plan before (and why), the shape for the descale check, and the device scalars.
  static constexpr std::size_t kFp8Scalars = 5;
  static constexpr std::size_t kFp8ScalarStride = 4;  // 16 bytes
  bool fp8_ = false;
  DescaleGranularity granularity_ = DescaleGranularity::per_tensor;
  bool per_head_refused_ = false;
  std::string per_head_reason_;
  Problem fp8_shape_{};
  DeviceBuffer fp8_scalars_;
  DeviceBuffer o_fp8_;  // cuDNN's e4m3 O
  std::size_t o_fp8_bytes_ = 0;
  float descale_o_ = 1.0f;
  std::array<const void*, 7> bound_fp8_pointers_{};

  std::optional<BackendDescriptor> variant_pack_;
  std::array<const void*, 4> bound_pointers_{};
  std::array<const void*, 9> bound_backward_pointers_{};
};

}  // namespace

std::unique_ptr<BaselineAttention> make_cudnn_sdpa_baseline(CudnnSdpaGraph graph) {
  return std::make_unique<CudnnSdpaBaseline>(graph);
}

}  // namespace flashscope
