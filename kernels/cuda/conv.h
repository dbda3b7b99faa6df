// Data movement around cuDNN's convolutions (conv.cu): the filters between
// Runnel's HWIO and cuDNN's OHWI, and the input padded at the end (or the
// input gradient cropped) for "same" padding with an odd excess
// (cudnn_params.h). Plain C++ for nvcc, like cwise.h; the OpKernels are in
// conv_kernels.cc. Each returns the launch's error; n == 0 launches nothing.
#ifndef RUNNEL_KERNELS_CUDA_CONV_H_
#define RUNNEL_KERNELS_CUDA_CONV_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace runnel::cuda {

// out[c][r] = in[r][c] for a rows×cols row-major matrix of `elem_bytes`
// (2, 4 or 8) byte elements.
cudaError_t LaunchTranspose(const void* in, void* out, int64_t rows,
                            int64_t cols, int elem_bytes, cudaStream_t stream);

// out[n, h, w, :] = in[n, h, w, :] where h < in_h and w < in_w, else 0,
// for NHWC `in` [batch, in_h, in_w, chans] and `out` [batch, out_h, out_w,
// chans]: pads at the end when out is larger, crops when it is smaller.
cudaError_t LaunchResizeEnd(const void* in, void* out, int64_t batch,
                            int64_t in_h, int64_t in_w, int64_t out_h,
                            int64_t out_w, int64_t chans, int elem_bytes,
                            cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_CONV_H_
