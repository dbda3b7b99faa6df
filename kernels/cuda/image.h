// The device kernels (image.cu) of resize, resize_grad and
// non_max_suppression's overlaps (image_kernels.cc). Plain C++ (nvcc
// compiles image.cu).
#ifndef RUNNEL_KERNELS_CUDA_IMAGE_H_
#define RUNNEL_KERNELS_CUDA_IMAGE_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

// One axis of resize's plan (framework/ops/resize_plan.h) on the GPU: out
// position o reads lo[o] and hi[o], hi weighed by w[o].
struct ResizeAxisGpu {
  const int64_t* lo;
  const int64_t* hi;
  const double* w;
};

// y [batch, out_h, out_w, chans] from x [batch, in_h, in_w, chans]: the
// CPU's four taps and weights ((1 - wr)(1 - wc), ...), summed in its order.
cudaError_t LaunchResize(ElemType type, const void* x, void* y, int64_t batch,
                         int64_t in_h, int64_t in_w, int64_t chans,
                         int64_t out_h, int64_t out_w, ResizeAxisGpu rows,
                         ResizeAxisGpu cols, cudaStream_t stream);

// One axis of the gradient's plan: input position i gets, for k in
// [starts[i], starts[i + 1]), weight w[k] of output position out[k].
struct ResizeBackAxisGpu {
  const int64_t* starts;
  const int64_t* out;
  const double* w;
};

// dx [batch, in_h, in_w, chans] from dy [batch, out_h, out_w, chans]: one
// thread per element of dx, summing over the outputs that read it.
cudaError_t LaunchResizeGrad(ElemType type, const void* dy, void* dx,
                             int64_t batch, int64_t in_h, int64_t in_w,
                             int64_t chans, int64_t out_h, int64_t out_w,
                             ResizeBackAxisGpu rows, ResizeBackAxisGpu cols,
                             cudaStream_t stream);

// non_max_suppression's overlaps, for boxes [batch, n, 4] (f32 or f64;
// [y1, x1, y2, x2], corners in either order, or [x_center, y_center, width,
// height] with `center`): for each image i and boxes j and k, bit k % 64 of
// mask[(i * n + j) * words + k / 64] (words = ceil(n / 64)) is set when
// their intersection over union is above `iou`, computed in double as the
// CPU's kernel computes it (no product contracted into a fused
// multiply-add, so both give the same bits). One thread per 64 bits.
cudaError_t LaunchNmsMask(ElemType type, const void* boxes, int64_t batch,
                          int64_t n, bool center, double iou, uint64_t* mask,
                          cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_IMAGE_H_
