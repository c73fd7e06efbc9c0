// The fault-isolation test hook of sweep_worker.hpp: real device faults, so the GPU test exercises
// exactly what a broken kernel would do to a worker.
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kernels/common/cuda_check.hpp"
#include "profiling/sweep/sweep_worker.hpp"

namespace flashscope {

namespace {

__global__ void write_to_unmapped_address_kernel() {
  *reinterpret_cast<volatile int*>(static_cast<std::size_t>(16)) = 1;
}

__global__ void spin_forever_kernel(const volatile int* never_set) {
  while (*never_set == 0)
    __nanosleep(1000);
}

}  // namespace

namespace {
constexpr std::string_view kSetupPrefix = "setup:";
}  // namespace

void inject_test_setup_failure_if_requested(int device) {
  const char* request = std::getenv("FLASHSCOPE_TEST_FAULT");
  if (request == nullptr || !std::string_view(request).starts_with(kSetupPrefix)) return;
  const std::string wanted(std::string_view(request).substr(kSetupPrefix.size()));
  if (wanted == std::to_string(device))
    throw std::runtime_error("FLASHSCOPE_TEST_FAULT=" + std::string(request) +
                             ": the worker of device " + wanted + " fails its setup (test hook)");
}

void inject_test_fault_if_requested(const MeasurementItem& item, cudaStream_t stream) {
  const char* request = std::getenv("FLASHSCOPE_TEST_FAULT");
  if (request == nullptr || item.is_baseline()) return;
  const std::string text = request;
  if (text.starts_with(kSetupPrefix)) return;  // inject_test_setup_failure_if_requested's
  const std::size_t first = text.find(':');
  const std::size_t second = text.find(':', first + 1);
  if (first == std::string::npos || second == std::string::npos)
    throw std::invalid_argument("FLASHSCOPE_TEST_FAULT must be <kind>:<step>:<seq_len>, got '" +
                                text + "'");
  const std::string kind = text.substr(0, first);
  if (text.substr(first + 1, second - first - 1) != item.subject.text() ||
      text.substr(second + 1) != std::to_string(item.problem.seq_len))
    return;
  if (kind == "abort") std::abort();
  if (kind == "illegal-address") {
    write_to_unmapped_address_kernel<<<1, 1, 0, stream>>>();
    FS_CUDA_CHECK(cudaGetLastError());
    FS_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  if (kind == "hang") {
    int* flag = nullptr;
    FS_CUDA_CHECK(cudaMalloc(&flag, sizeof(int)));
    FS_CUDA_CHECK(cudaMemset(flag, 0, sizeof(int)));
    spin_forever_kernel<<<1, 1, 0, stream>>>(flag);
    FS_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  throw std::invalid_argument("FLASHSCOPE_TEST_FAULT: unknown kind '" + kind +
                              "' (illegal-address, abort or hang)");
}

}  // namespace flashscope
