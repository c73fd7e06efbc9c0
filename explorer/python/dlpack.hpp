// The DLPack C ABI (https://dmlc.github.io/dlpack/latest/c_api.html), written out from the public
// specification because no distribution packages dlpack.h. Only what flashscope exchanges is
// declared: the tensor descriptor, its legacy managed form (capsule "dltensor") and the versioned
// one of DLPack 1.x (capsule "dltensor_versioned"). The layouts are part of the ABI and must not
// change.
#pragma once

#include <cstdint>

namespace flashscope::dlpack {

enum DeviceType : std::int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,  // pinned host memory
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
};

struct Device {
  std::int32_t device_type;  // DeviceType
  std::int32_t device_id;
};

enum DataTypeCode : std::uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
  // DLPack 1.1's 8-bit float codes; e4m3fn (no infinity) is PyTorch's float8_e4m3fn, the FP8
  // track's input (docs/spec/fp8-track.md §1), exported with bits 8.
  kDLFloat8_e4m3fn = 10,
};

struct DataType {
  std::uint8_t code;  // DataTypeCode
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  std::int32_t ndim;
  DataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements; null means compact row-major
  std::uint64_t byte_offset;
};

struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

struct PackVersion {
  std::uint32_t major;
  std::uint32_t minor;
};

// The versioned form's flags.
constexpr std::uint64_t kFlagReadOnly = 1ull << 0;

struct ManagedTensorVersioned {
  PackVersion version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  std::uint64_t flags;
  Tensor dl_tensor;
};

// The DLPack major version this code reads and writes.
constexpr std::uint32_t kMajorVersion = 1;
constexpr std::uint32_t kMinorVersion = 0;

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kVersionedCapsuleName = "dltensor_versioned";
constexpr const char* kUsedCapsuleName = "used_dltensor";
constexpr const char* kUsedVersionedCapsuleName = "used_dltensor_versioned";

// "cpu", "cuda", "cuda_host", ... for messages; "device type N" for one this list lacks.
inline const char* device_type_name(std::int32_t type) {
  switch (type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda_host (pinned host memory)";
    case kDLOpenCL:
      return "opencl";
    case kDLVulkan:
      return "vulkan";
    case kDLMetal:
      return "metal";
    case kDLVPI:
      return "vpi";
    case kDLROCM:
      return "rocm";
    case kDLROCMHost:
      return "rocm_host";
    case kDLExtDev:
      return "ext_dev";
    case kDLCUDAManaged:
      return "cuda_managed";
    case kDLOneAPI:
      return "oneapi";
    case kDLWebGPU:
      return "webgpu";
    case kDLHexagon:
      return "hexagon";
    default:
      return nullptr;
  }
}

}  // namespace flashscope::dlpack
