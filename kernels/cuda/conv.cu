// conv.h's kernels: plain copies, by element size (the values are only
// moved, so a 4-byte float and a 4-byte int are the same to them).
#include <cstdint>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/launch.cuh"

namespace runnel::cuda {
namespace {

template <typename T>
__global__ void Transpose(const T* in, T* out, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    // i indexes out, a cols×rows matrix: coalesced writes.
    const int64_t c = i / rows, r = i % rows;
    out[i] = in[r * cols + c];
  }
}

template <typename T>
__global__ void ResizeEnd(const T* in, T* out, int64_t batch, int64_t in_h,
                          int64_t in_w, int64_t out_h, int64_t out_w,
                          int64_t chans) {
  const int64_t n = batch * out_h * out_w * chans;
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const int64_t c = i % chans;
    const int64_t w = (i / chans) % out_w;
    const int64_t h = (i / (chans * out_w)) % out_h;
    const int64_t b = i / (chans * out_w * out_h);
    out[i] = h < in_h && w < in_w ? in[((b * in_h + h) * in_w + w) * chans + c]
                                  : T(0);
  }
}

}  // namespace

cudaError_t LaunchTranspose(const void* in, void* out, int64_t rows,
                            int64_t cols, int elem_bytes, cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  switch (elem_bytes) {
    case 2:
      Transpose<<<Blocks(n), kThreads, 0, stream>>>(
          static_cast<const uint16_t*>(in), static_cast<uint16_t*>(out), rows,
          cols);
      break;
    case 4:
      Transpose<<<Blocks(n), kThreads, 0, stream>>>(
          static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), rows,
          cols);
      break;
    case 8:
      Transpose<<<Blocks(n), kThreads, 0, stream>>>(
          static_cast<const uint64_t*>(in), static_cast<uint64_t*>(out), rows,
          cols);
      break;
    default:
      return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

cudaError_t LaunchResizeEnd(const void* in, void* out, int64_t batch,
                            int64_t in_h, int64_t in_w, int64_t out_h,
                            int64_t out_w, int64_t chans, int elem_bytes,
                            cudaStream_t stream) {
  const int64_t n = batch * out_h * out_w * chans;
  if (n == 0) return cudaSuccess;
  switch (elem_bytes) {
    case 2:
      ResizeEnd<<<Blocks(n), kThreads, 0, stream>>>(
          static_cast<const uint16_t*>(in), static_cast<uint16_t*>(out), batch,
          in_h, in_w, out_h, out_w, chans);
      break;
    case 4:
      ResizeEnd<<<Blocks(n), kThreads, 0, stream>>>(
          static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), batch,
          in_h, in_w, out_h, out_w, chans);
      break;
    case 8:
      ResizeEnd<<<Blocks(n), kThreads, 0, stream>>>(
          static_cast<const uint64_t*>(in), static_cast<uint64_t*>(out), batch,
          in_h, in_w, out_h, out_w, chans);
      break;
    default:
      return cudaErrorNotSupported;
  }
  return cudaGetLastError();
}

}  // namespace runnel::cuda
