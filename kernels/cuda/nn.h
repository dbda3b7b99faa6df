// The softmax family and the softmax cross-entropies on the GPU (nn.cu),
// with the CPU kernels' formulas (kernels/cpu/nn_kernels.cc), computed in
// f32 for f16 and bf16 (rounded to nearest even once on output) and in f64
// for f64. Plain C++, as nvcc compiles nn.cu; the OpKernels live in
// nn_kernels.cc.
#ifndef RUNNEL_KERNELS_CUDA_NN_H_
#define RUNNEL_KERNELS_CUDA_NN_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

// softmax (or with `log`, log_softmax) along the lines of x: line
// o * inner + j holds x[(o * len + k) * inner + j] for k < len. With
// m = max(line) and s = sum(exp(line - m)): exp(x - m) / s, or
// x - m - log(s). With `keep` (masked_softmax; inner 1), line l takes
// only its elements k where keep[(l % keep_lines) * len + k] is true (m
// and s over those); the others are 0, and a line that keeps none is 0.
cudaError_t LaunchSoftmax(ElemType type, bool log, const void* x, void* y,
                          int64_t outer, int64_t len, int64_t inner,
                          cudaStream_t stream, const bool* keep = nullptr,
                          int64_t keep_lines = 1);

// softmax_grad over `lines` contiguous lines of `len`: dx = (dy - sum(dy *
// y)) * y.
cudaError_t LaunchSoftmaxGrad(ElemType type, const void* dy, const void* y,
                              void* dx, int64_t lines, int64_t len,
                              cudaStream_t stream);

// layer_norm over `rows` contiguous rows of `n` (kernels/cpu/nn_kernels.cc):
// y = (x - mean) * rstd * scale + offset, and each row's mean and rstd =
// 1 / sqrt(biased variance + eps), stored in the computing type (f32 for
// f16 and bf16).
cudaError_t LaunchLayerNorm(ElemType type, const void* x, const void* scale,
                            const void* offset, void* y, void* mean, void* rstd,
                            int64_t rows, int64_t n, double eps,
                            cudaStream_t stream);

// layer_norm_grad: dx row by row; dscale (the sum of dy * xhat) and
// doffset (of dy) over the rows, a thread per column summing the rows in
// order. Launches nothing when rows * n is 0 (the caller zeroes dscale
// and doffset for rows == 0).
cudaError_t LaunchLayerNormGrad(ElemType type, const void* dy, const void* x,
                                const void* scale, const void* mean,
                                const void* rstd, void* dx, void* dscale,
                                void* doffset, int64_t rows, int64_t n,
                                cudaStream_t stream);

// batch_norm over x [rows, c] (its last axis the channels; rows >= 1):
// each channel's mean and biased variance over the rows (stored in the
// computing type, f32 for f16 and bf16), and y = (x - mean) / sqrt(variance
// + eps) * scale + offset. The sums run over chunks of rows, each chunk's
// partial into `scratch` (BatchNormScratch(rows, c) elements of the
// computing type), then per channel in chunk order.
int64_t BatchNormScratch(int64_t rows, int64_t c);
cudaError_t LaunchBatchNorm(ElemType type, const void* x, const void* scale,
                            const void* offset, void* y, void* mean,
                            void* variance, void* scratch, int64_t rows,
                            int64_t c, double eps, cudaStream_t stream);

// batch_norm_grad: doffset = the sum of dy over the rows, dscale that of dy
// * xhat (xhat = (x - mean) * rstd, rstd = 1 / sqrt(variance + eps)), and
// dx = scale * rstd * (dy - doffset / rows - xhat * dscale / rows).
cudaError_t LaunchBatchNormGrad(ElemType type, const void* dy, const void* x,
                                const void* scale, const void* mean,
                                const void* variance, void* dx, void* dscale,
                                void* doffset, void* scratch, int64_t rows,
                                int64_t c, double eps, cudaStream_t stream);

// cumsum along the middle of [outer, len, inner] (kernels/cpu/scan_kernels.cc):
// a thread per line, summing in the computing type (integers wrap).
cudaError_t LaunchCumsum(ElemType type, const void* x, void* y, int64_t outer,
                         int64_t len, int64_t inner, bool exclusive,
                         bool reverse, cudaStream_t stream);

// loss[r] = sum_k probs[r, k] * (lse(logits[r]) - logits[r, k]) for rows of
// `classes` elements; 0 for rows of none.
cudaError_t LaunchSoftmaxCrossEntropy(ElemType type, const void* logits,
                                      const void* probs, void* loss,
                                      int64_t rows, int64_t classes,
                                      cudaStream_t stream);

// loss[r] = lse(logits[r]) - logits[r, labels[r]], labels i32 or (with
// `labels_i64`) i64. A row whose label is outside [0, classes) gets a NaN
// loss and lowers `*first_bad` (a device word the caller set to all ones)
// to its index, so the host can name the first bad label as the CPU does.
cudaError_t LaunchSparseSoftmaxCrossEntropy(ElemType type, bool labels_i64,
                                            const void* logits,
                                            const void* labels, void* loss,
                                            int64_t rows, int64_t classes,
                                            unsigned long long* first_bad,
                                            cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_NN_H_
