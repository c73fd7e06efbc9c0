// FS_HOST_DEVICE marks a function both the host and the kernels call: nvcc compiles it for both;
// the host compiler, which builds the host tests of such headers, sees a plain function.
#pragma once

#if defined(__CUDACC__)
#define FS_HOST_DEVICE __host__ __device__
#else
#define FS_HOST_DEVICE
#endif
