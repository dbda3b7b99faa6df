// resize's device kernels (image.h).
#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/image.h"
#include "kernels/cuda/launch.cuh"

namespace runnel::cuda {
namespace {

// (n, h, w, c) of element i of an NHWC image of `height` and `width`.
struct Pixel {
  int64_t n, h, w, c;
};
__device__ __forceinline__ Pixel PixelOf(int64_t i, int64_t height,
                                         int64_t width, int64_t chans) {
  return {i / (chans * width * height), (i / (chans * width)) % height,
          (i / chans) % width, i % chans};
}

template <typename T>
__global__ void ResizeKernel(const T* x, T* y, int64_t in_h, int64_t in_w,
                             int64_t chans, int64_t out_h, int64_t out_w,
                             ResizeAxisGpu rows, ResizeAxisGpu cols,
                             int64_t total) {
  using C = Wide<T>;
  for (int64_t i = FirstIndex(); i < total; i += GridStride()) {
    const auto [n, oh, ow, c] = PixelOf(i, out_h, out_w, chans);
    const double wr = rows.w[oh], wc = cols.w[ow];
    const int64_t at[4] = {
        rows.lo[oh] * in_w + cols.lo[ow], rows.lo[oh] * in_w + cols.hi[ow],
        rows.hi[oh] * in_w + cols.lo[ow], rows.hi[oh] * in_w + cols.hi[ow]};
    const double w[4] = {(1 - wr) * (1 - wc), (1 - wr) * wc, wr * (1 - wc),
                         wr * wc};
    const T* image = x + n * in_h * in_w * chans;
    C v = C(0);
    for (int k = 0; k < 4; ++k) {
      v += static_cast<C>(w[k]) * Widen(image[at[k] * chans + c]);
    }
    y[i] = Narrow<T>(v);
  }
}

template <typename T>
__global__ void ResizeGradKernel(const T* dy, T* dx, int64_t in_h, int64_t in_w,
                                 int64_t chans, int64_t out_h, int64_t out_w,
                                 ResizeBackAxisGpu rows, ResizeBackAxisGpu cols,
                                 int64_t total) {
  using C = Wide<T>;
  for (int64_t i = FirstIndex(); i < total; i += GridStride()) {
    const auto [n, h, w, c] = PixelOf(i, in_h, in_w, chans);
    C sum = C(0);
    for (int64_t a = rows.starts[h]; a < rows.starts[h + 1]; ++a) {
      for (int64_t b = cols.starts[w]; b < cols.starts[w + 1]; ++b) {
        const int64_t o =
            ((n * out_h + rows.out[a]) * out_w + cols.out[b]) * chans + c;
        sum += static_cast<C>(rows.w[a] * cols.w[b]) * Widen(dy[o]);
      }
    }
    dx[i] = Narrow<T>(sum);
  }
}

}  // namespace

cudaError_t LaunchResize(ElemType type, const void* x, void* y, int64_t batch,
                         int64_t in_h, int64_t in_w, int64_t chans,
                         int64_t out_h, int64_t out_w, ResizeAxisGpu rows,
                         ResizeAxisGpu cols, cudaStream_t stream) {
  const int64_t total = batch * out_h * out_w * chans;
  if (total == 0) return cudaSuccess;
  return WithElemType(type, [&](auto zero) -> cudaError_t {
    using T = decltype(zero);
    if constexpr (!kFloat<T>) {
      return cudaErrorNotSupported;
    } else {
      ResizeKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), in_h, in_w, chans,
          out_h, out_w, rows, cols, total);
      return cudaGetLastError();
    }
  });
}

cudaError_t LaunchResizeGrad(ElemType type, const void* dy, void* dx,
                             int64_t batch, int64_t in_h, int64_t in_w,
                             int64_t chans, int64_t out_h, int64_t out_w,
                             ResizeBackAxisGpu rows, ResizeBackAxisGpu cols,
                             cudaStream_t stream) {
  const int64_t total = batch * in_h * in_w * chans;
  if (total == 0) return cudaSuccess;
  return WithElemType(type, [&](auto zero) -> cudaError_t {
    using T = decltype(zero);
    if constexpr (!kFloat<T>) {
      return cudaErrorNotSupported;
    } else {
      ResizeGradKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
          static_cast<const T*>(dy), static_cast<T*>(dx), in_h, in_w, chans,
          out_h, out_w, rows, cols, total);
      return cudaGetLastError();
    }
  });
}

}  // namespace runnel::cuda
