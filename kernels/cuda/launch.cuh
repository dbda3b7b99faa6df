// Grid-stride launches for the .cu files of kernels/cuda: a kernel loops
//
//   for (int64_t i = FirstIndex(); i < n; i += GridStride()) ...
//
// over its n elements (64-bit: tensors may pass 2^31 elements), launched
// with <<<Blocks(n), kThreads, 0, stream>>>.
#ifndef RUNNEL_KERNELS_CUDA_LAUNCH_CUH_
#define RUNNEL_KERNELS_CUDA_LAUNCH_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace runnel::cuda {

inline constexpr unsigned kThreads = 256;

// Enough blocks for one element per thread, at most 2^20 (the loop covers
// the rest).
inline unsigned Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20));
}

__device__ __forceinline__ int64_t FirstIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_LAUNCH_CUH_
