// max_pool, avg_pool and their gradients on the GPU (pool.cu), NHWC, with
// the CPU kernels' semantics (kernels/cpu/pool_kernels.cc) exactly, where
// cuDNN's pooling does not give them (pool_plan.h says where it does):
// windows hanging over the edge with "same"
// padding count only their elements inside the input (and the padding may
// be one larger at the end than at the start); max_pool ignores NaN (a
// window of NaN and -inf pools to the type's lowest value); a max_pool
// gradient goes to the first maximal element of its window (or the
// window's first element when none is); the 16-bit floats compute in f32;
// the gradients sum each input element's windows in row-major order.
// Plain C++ for nvcc; the OpKernels are in pool_kernels.cc. Each returns the
// launch's error (cudaErrorNotSupported for a type it does not take);
// nothing is launched for 0 elements.
#ifndef RUNNEL_KERNELS_CUDA_POOL_H_
#define RUNNEL_KERNELS_CUDA_POOL_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

// Windows of size_h×size_w every stride_h, stride_w; window (oh, ow) starts
// at input row oh * stride_h - pad_h (column likewise) and is clipped to
// the input.
// The 3-D pools (NDHWC) have a depth, the same way; a 2-D pool's is 1.
struct PoolGeometry {
  int64_t batch, in_h, in_w, chans;
  int64_t out_h, out_w;
  int64_t size_h, size_w, stride_h, stride_w, pad_h, pad_w;
  int64_t dil_h = 1, dil_w = 1;  // the distance between a window's taps
  int64_t in_d = 1, out_d = 1, size_d = 1, stride_d = 1, pad_d = 0, dil_d = 1;
};

// y = max_pool(x) (`max`: floats, i32, i64) or avg_pool(x) (floats).
cudaError_t LaunchPool(bool max, ElemType type, const PoolGeometry& g,
                       const void* x, void* y, cudaStream_t stream);

// The gradient of max_pool: `argmax` (y's size, scratch) gets the input
// element ((d * in_h + h) * in_w + w) each output's gradient goes to, then
// dx sums them.
cudaError_t LaunchMaxPoolGrad(ElemType type, const PoolGeometry& g,
                              const void* x, const void* dy, int64_t* argmax,
                              void* dx, cudaStream_t stream);

// max_pool_with_argmax: y as LaunchPool's max, and argmax (y's size) each
// maximum's position in its image, (h * in_w + w) * chans + c (-1 for a
// window wholly outside the input), as the CPU's.
cudaError_t LaunchMaxPoolWithArgmax(ElemType type, const PoolGeometry& g,
                                    const void* x, void* y, int64_t* argmax,
                                    cudaStream_t stream);

// The gradient of avg_pool.
cudaError_t LaunchAvgPoolGrad(ElemType type, const PoolGeometry& g,
                              const void* dy, void* dx, cudaStream_t stream);

// y[i] = the lowest value where y[i] is NaN, -inf or lower, for the `n`
// elements of a max_pool output that cuDNN computed ignoring NaN: then a
// window of nothing but NaN and -inf gives what it gives on the CPU, which
// starts each maximum at the lowest value of the type it computes in (f32
// for f16, so -inf once rounded to f16). Floats only.
cudaError_t LaunchMaxPoolFloor(ElemType type, int64_t n, void* y,
                               cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_POOL_H_
