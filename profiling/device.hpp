// The GPU a measurement runs on, described without creating a context, and the one error every
// headless mode reports when there is none.
#pragma once

#include <stdexcept>
#include <string>

namespace flashscope {

// No usable CUDA device (no driver, no GPU, index out of range). The message says which and why.
class NoCudaDevice : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DeviceDescription {
  int index = 0;
  std::string name;            // "NVIDIA H100 80GB HBM3"
  std::string uuid;            // "GPU-8e5b7a0c-…", the spelling of nvidia-smi -L
  int compute_capability = 0;  // major * 10 + minor
  int sm_count = 0;
  int l2_bytes = 0;
  int peak_sm_clock_mhz = 0;  // cudaDevAttrClockRate: the highest clock the SMs may run at
};

// Throws NoCudaDevice when cudaGetDeviceCount fails (error 35 without a driver, 100 with none
// visible) or `index` is out of range. Creates no context.
DeviceDescription describe_device(int index);

// The number of CUDA devices this process sees (after CUDA_VISIBLE_DEVICES). Throws NoCudaDevice
// when there is none or the runtime cannot tell (no driver).
int cuda_device_count();

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from the 16 bytes of cudaDeviceProp::uuid.
std::string format_gpu_uuid(const unsigned char (&bytes)[16]);

// Makes `index` current and creates its primary context, so later calls (CUPTI included) find one.
void activate_device(int index);

// An upper bound on any fp16/bf16 kernel's dense throughput on this device, for sanity checks:
// SMs x peak clock x 4096 FLOP per SM per cycle (Hopper's wgmma rate; Ampere's mma.sync rate is
// half of it).
double tensor_peak_tflops_bound(const DeviceDescription& device);

}  // namespace flashscope
