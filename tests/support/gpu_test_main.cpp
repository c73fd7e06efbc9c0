// Entry point of every GPU test executable: without a usable CUDA device it reports the reason
// and stops, so ctest marks the test skipped (SKIP_REGULAR_EXPRESSION) instead of passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <iostream>

int main(int argc, char** argv) {
  int device_count = 0;
  const cudaError_t status = cudaGetDeviceCount(&device_count);
  if (status != cudaSuccess || device_count == 0) {
    std::cout << "SKIPPED: no CUDA device ("
              << (status != cudaSuccess
                      ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status)
                      : std::string("cudaGetDeviceCount found 0 devices"))
              << ")\n";
    return 0;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
