// resize's and non_max_suppression's device kernels (image.h).
#include <type_traits>

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

// std::min and std::max, NaN and all.
__device__ __forceinline__ double Lesser(double a, double b) {
  return b < a ? b : a;
}
__device__ __forceinline__ double Greater(double a, double b) {
  return a < b ? b : a;
}

// [lo_y, lo_x, hi_y, hi_x] of box v, as the CPU's Corners (x / 2 is exact,
// so the halves need no care).
template <typename T>
__device__ void NmsCorners(const T* v, bool center, double* c) {
  const double v0 = v[0], v1 = v[1], v2 = v[2], v3 = v[3];
  if (center) {  // [x_center, y_center, width, height]
    c[0] = __dsub_rn(v1, v3 / 2);
    c[1] = __dsub_rn(v0, v2 / 2);
    c[2] = __dadd_rn(v1, v3 / 2);
    c[3] = __dadd_rn(v0, v2 / 2);
  } else {
    c[0] = Lesser(v0, v2);
    c[1] = Lesser(v1, v3);
    c[2] = Greater(v0, v2);
    c[3] = Greater(v1, v3);
  }
}

// The CPU's Suppresses, each rounding explicit.
__device__ bool NmsOverlaps(const double* u, const double* v, double iou) {
  const double h = __dsub_rn(Lesser(u[2], v[2]), Greater(u[0], v[0]));
  const double w = __dsub_rn(Lesser(u[3], v[3]), Greater(u[1], v[1]));
  if (h <= 0 || w <= 0) return false;
  const double inter = __dmul_rn(h, w);
  const double a = __dmul_rn(__dsub_rn(u[2], u[0]), __dsub_rn(u[3], u[1]));
  const double b = __dmul_rn(__dsub_rn(v[2], v[0]), __dsub_rn(v[3], v[1]));
  const double uni = __dsub_rn(__dadd_rn(a, b), inter);
  if (a <= 0 || b <= 0 || uni <= 0) return false;
  return __ddiv_rn(inter, uni) > iou;
}

template <typename T>
__global__ void NmsMaskKernel(const T* boxes, int64_t n, int64_t words,
                              bool center, double iou, uint64_t* mask,
                              int64_t total) {
  for (int64_t t = FirstIndex(); t < total; t += GridStride()) {
    const int64_t word = t % words, row = t / words;  // row: i * n + j
    const T* image = boxes + (row / n) * n * 4;
    double u[4], v[4];
    NmsCorners(boxes + row * 4, center, u);
    uint64_t bits = 0;
    const int64_t end = min(n, (word + 1) * 64);
    for (int64_t k = word * 64; k < end; ++k) {
      NmsCorners(image + k * 4, center, v);
      if (NmsOverlaps(u, v, iou)) bits |= uint64_t{1} << (k - word * 64);
    }
    mask[t] = bits;
  }
}

}  // namespace

cudaError_t LaunchNmsMask(ElemType type, const void* boxes, int64_t batch,
                          int64_t n, bool center, double iou, uint64_t* mask,
                          cudaStream_t stream) {
  const int64_t words = (n + 63) / 64;
  const int64_t total = batch * n * words;
  if (total == 0) return cudaSuccess;
  return WithElemType(type, [&](auto zero) -> cudaError_t {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, double>) {
      return cudaErrorNotSupported;
    } else {
      NmsMaskKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
          static_cast<const T*>(boxes), n, words, center, iou, mask, total);
      return cudaGetLastError();
    }
  });
}

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
