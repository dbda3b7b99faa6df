// The fused recurrent cells on the GPU (rnn.cu), with the CPU kernels'
// formulas (kernels/cpu/rnn_kernels.cc), computed in f32 for f16 and bf16
// (rounded once on output) and in f64 for f64. Plain C++, as nvcc compiles
// rnn.cu; the OpKernels live in nn_kernels.cc. Each launcher works `rows`
// rows of `units`: a thread per unit of a row.
#ifndef RUNNEL_KERNELS_CUDA_RNN_H_
#define RUNNEL_KERNELS_CUDA_RNN_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

// lstm_cell: gates [rows, 4 units] (i, f, g, o), c [rows, units] -> h,
// c_next; the gates' activations also to `activations` [rows, 4 units]
// unless it is nullptr (it may be `gates`).
cudaError_t LaunchLstmCell(ElemType type, const void* gates, const void* c,
                           void* h, void* c_next, int64_t rows, int64_t units,
                           cudaStream_t stream, void* activations = nullptr);
// lstm_cell_grad: -> dgates [rows, 4 units], dc [rows, units]; with
// `activated`, `gates` holds LaunchLstmCell's activations.
cudaError_t LaunchLstmCellGrad(ElemType type, const void* gates, const void* c,
                               const void* dh, const void* dc_next,
                               void* dgates, void* dc, int64_t rows,
                               int64_t units, cudaStream_t stream,
                               bool activated = false);
// gru_cell: x and hh [rows, 3 units] (r, z, n), h [rows, units] -> h_next.
cudaError_t LaunchGruCell(ElemType type, const void* x, const void* hh,
                          const void* h, void* h_next, int64_t rows,
                          int64_t units, cudaStream_t stream);
// gru_cell_grad: -> dx, dhh [rows, 3 units], dh [rows, units].
cudaError_t LaunchGruCellGrad(ElemType type, const void* x, const void* hh,
                              const void* h, const void* dh_next, void* dx,
                              void* dhh, void* dh, int64_t rows, int64_t units,
                              cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_RNN_H_
