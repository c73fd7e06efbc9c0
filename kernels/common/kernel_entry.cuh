// Builds a registry entry for one instantiated kernel. Every step's `register_kernel<C>` calls
// make_kernel_entry (steps 1–16) or make_hopper_kernel_entry (17+, with launch_kernel or, from
// step 18, launch_tma_kernel) with its own __global__ template, so all steps share one launch
// interface. A backward step (docs/spec/backward-track.md) calls make_backward_kernel_entry with
// its own launcher, which runs every kernel of the pass.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "backward_args.hpp"
#include "config.hpp"
#include "forward_args.hpp"
#include "registry.hpp"
#include "tensor_map.hpp"

namespace flashscope {

using KernelFunction = void (*)(const ForwardArgs);
// The TMA steps (18+) also receive the tensor maps of Q, K, V and O as one __grid_constant__.
using TmaKernelFunction = void (*)(const ForwardArgs, const AttentionTensorMaps);

// Kernels are templated on a type carrying the config rather than on the config itself:
// nvcc 13.0's host stub for a __global__ template cannot spell a class-type template argument
// whose type is declared in a namespace (the generated stub names the mangled type and fails
// to compile). Profilers show `flash_forward_kernel<StaticConfig<KernelConfig{...}>>`.
template <KernelConfig C>
struct StaticConfig {
  static constexpr KernelConfig value = C;
};

// Opts `kKernel` in to its dynamic shared memory above 48 KiB, once per process and kernel (the
// attribute belongs to the function, so two steps with the same config each set their own).
template <KernelConfig C, auto kKernel>
cudaError_t opt_in_smem() {
  constexpr int kSmemBytes = smem_bytes(C);
  if constexpr (kSmemBytes > 48 * 1024) {
    static const cudaError_t opt_in =
        cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    return opt_in;
  }
  return cudaSuccess;
}

// Grid x = query blocks, y = heads, z = batch; 1-D blocks of 32·n_warps threads (spec §2.5).
template <KernelConfig C, KernelFunction Kernel>
cudaError_t launch_kernel(const ForwardArgs& args, cudaStream_t stream) {
  if (const cudaError_t status = opt_in_smem<C, Kernel>(); status != cudaSuccess) return status;
  const dim3 grid(static_cast<unsigned>(args.n_Q_blocks), static_cast<unsigned>(args.n_heads),
                  static_cast<unsigned>(args.batch));
  Kernel<<<grid, threads_per_block(C), smem_bytes(C), stream>>>(args);
  return cudaGetLastError();
}

// The Hopper TMA steps: the same grid, plus the tensor maps, encoded on the host for this launch's
// tensors (a few microseconds; the kernels take milliseconds). Q boxes are kQBoxRows rows, K and V
// boxes B_c rows, O boxes kOBoxRows rows. Throws TensorMapError when a map cannot be encoded.
template <KernelConfig C, TmaKernelFunction Kernel, int kQBoxRows, int kOBoxRows>
cudaError_t launch_tma_kernel(const ForwardArgs& args, cudaStream_t stream) {
  if (const cudaError_t status = opt_in_smem<C, Kernel>(); status != cudaSuccess) return status;
  const AttentionTensorMaps maps = make_attention_tensor_maps(C, args, kQBoxRows, C.B_c, kOBoxRows);
  const dim3 grid(static_cast<unsigned>(args.n_Q_blocks), static_cast<unsigned>(args.n_heads),
                  static_cast<unsigned>(args.batch));
  Kernel<<<grid, threads_per_block(C), smem_bytes(C), stream>>>(args, maps);
  return cudaGetLastError();
}

// A registry entry for a kernel of the Hopper track: compiled for sm_90a only.
template <KernelConfig C, typename Function>
KernelEntry make_hopper_kernel_entry(int step, KernelLauncher launch, Function kernel,
                                     std::vector<int> static_head_counts = {}) {
  static_assert(is_hopper_config(C), "a Hopper step needs a Hopper config (stages >= 1)");
  KernelEntry entry;
  entry.step = step;
  entry.config = C;
  entry.launch = launch;
  entry.kernel_function = reinterpret_cast<const void*>(kernel);
  entry.smem_bytes = smem_bytes(C);
  entry.threads_per_block = threads_per_block(C);
  entry.static_head_counts = std::move(static_head_counts);
  entry.exact_compute_capability = 90;
  entry.display_name = std::to_string(step) + " " + to_short_form(C);
  return entry;
}

// Opts `kernel` in to `bytes` of dynamic shared memory above 48 KiB, once per process and kernel;
// for kernels whose footprint is not smem_bytes(C) (the backward steps').
template <auto kKernel, int kBytes>
cudaError_t opt_in_dynamic_smem() {
  if constexpr (kBytes > 48 * 1024) {
    static const cudaError_t opt_in =
        cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes);
    return opt_in;
  }
  return cudaSuccess;
}

// A registry entry for a backward step (docs/spec/backward-track.md §4): `launch` runs the whole
// pass (preprocess, main kernel, dQ conversion) and `workspace_bytes` says how much scratch memory
// it needs; the attributes (kernel function, shared memory, threads) are the main kernel's. The
// forward launcher stays nullptr. `exact_compute_capability` is 0 for a step that runs on any
// sm_80+ device, 90 for one compiled for sm_90a only.
template <KernelConfig C>
KernelEntry make_backward_kernel_entry(int step, BackwardKernelLauncher launch,
                                       BackwardWorkspaceBytes workspace_bytes,
                                       const void* main_kernel, int main_kernel_smem_bytes,
                                       int threads_per_block, int exact_compute_capability = 0) {
  KernelEntry entry;
  entry.step = step;
  entry.config = C;
  entry.launch_backward = launch;
  entry.backward_workspace_bytes = workspace_bytes;
  entry.kernel_function = main_kernel;
  entry.smem_bytes = main_kernel_smem_bytes;
  entry.threads_per_block = threads_per_block;
  entry.exact_compute_capability = exact_compute_capability;
  entry.display_name = std::to_string(step) + " " + to_short_form(C);
  return entry;
}

template <KernelConfig C, KernelFunction Kernel>
KernelEntry make_kernel_entry(int step, std::vector<int> static_head_counts = {}) {
  KernelEntry entry;
  entry.step = step;
  entry.config = C;
  entry.launch = &launch_kernel<C, Kernel>;
  entry.kernel_function = reinterpret_cast<const void*>(Kernel);
  entry.smem_bytes = smem_bytes(C);
  entry.threads_per_block = threads_per_block(C);
  entry.static_head_counts = std::move(static_head_counts);
  entry.display_name = std::to_string(step) + " " + to_short_form(C);
  return entry;
}

}  // namespace flashscope
