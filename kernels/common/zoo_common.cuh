// zoo_common.cuh: device helpers shared by every kernel of the zoo, and the host-side
// CUDA error-check macro for builds outside NVRTC (nvcc, ctypes exports).
#pragma once

#ifndef __CUDACC_RTC__
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>
// Checks a CUDA runtime call; on failure prints where and returns the error code, so an
// extern "C" launcher hands the cudaError_t back to its caller instead of aborting it.
#define ZOO_CUDA_CHECK(call)                                                              \
  do {                                                                                    \
    cudaError_t zoo_err_ = (call);                                                        \
    if (zoo_err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "zoo: %s failed at %s:%d: %s (%s)\n", #call, __FILE__,         \
                   __LINE__, cudaGetErrorName(zoo_err_), cudaGetErrorString(zoo_err_));    \
      return static_cast<int>(zoo_err_);                                                  \
    }                                                                                     \
  } while (0)
#else
typedef unsigned long long uintptr_t;
#endif

namespace zoo {

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int cmax(int a, int b) { return a > b ? a : b; }

// Grouped ("swizzled") block order: consecutive blocks walk GROUP_M tile rows down one
// tile column before moving right, so the A rows and B columns they share stay in L2.
__device__ __forceinline__ void grouped_tile(int pid, int tiles_m, int tiles_n, int group_m,
                                             int& tile_m, int& tile_n) {
  const int per_group = group_m * tiles_n;
  const int first_m = (pid / per_group) * group_m;
  const int rows = min(tiles_m - first_m, group_m);
  tile_m = first_m + (pid % per_group) % rows;
  tile_n = (pid % per_group) / rows;
}

}  // namespace zoo
