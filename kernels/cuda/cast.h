// The cast kernel (cast.cu): every pair of Runnel's dtypes, with the CPU
// kernel's conversions (kernels/cpu/cwise_cast_kernels.cc). Plain C++
// (nvcc compiles cast.cu); the OpKernel is cwise_cast_kernels.cc.
#ifndef RUNNEL_KERNELS_CUDA_CAST_H_
#define RUNNEL_KERNELS_CUDA_CAST_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

// y = cast(x) over `n` elements: to bool x != 0; floats to integers
// truncate toward zero and saturate, NaN giving 0; integers to narrower
// integers wrap; to and from f16/bf16 through float, rounding to nearest
// even as base/float16.h does (NaN to the quiet NaN 0x7e00 / 0x7fc0
// with its sign).
cudaError_t LaunchCast(ElemType from, ElemType to, const void* x, void* y,
                       int64_t n, cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_CAST_H_
