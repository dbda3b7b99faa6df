// Launch geometry shared by the .cu files: grid-stride loops of 256
// threads a block, at most 2^20 blocks, 64-bit indices (a tensor may have
// more than 2^31 elements). Device code only; nvcc includes it.
#ifndef RUNNEL_KERNELS_CUDA_GRID_CUH_
#define RUNNEL_KERNELS_CUDA_GRID_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace runnel::cuda {

inline constexpr unsigned kGridThreads = 256;

// Blocks for `n` elements (n > 0).
inline unsigned GridBlocks(int64_t n) {
  const int64_t blocks = (n + kGridThreads - 1) / kGridThreads;
  return static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20));
}

__device__ __forceinline__ int64_t GridFirst() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStep() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_GRID_CUH_
