// The GPU's variable kernels' device code (state.cu): the scatter updates.
// Plain C++ (nvcc compiles state.cu); the OpKernels are state_kernels.cc.
#ifndef RUNNEL_KERNELS_CUDA_STATE_H_
#define RUNNEL_KERNELS_CUDA_STATE_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

enum class ScatterOp { kAdd, kSub, kUpdate };

// Scatter of `updates` (rows of `row` elements) into `var`, grouped by
// destination on the host so that every row is written by one thread per
// column, in the order the CPU writes it: destination row rows[u] takes
// update rows order[offsets[u]], ..., order[offsets[u + 1] - 1] in turn
// (add and sub combine them in that order; update keeps the last). `rows`,
// `offsets` and `order` are in GPU memory; `num_rows` destinations. Takes
// f32, f64, i32 and i64 (cudaErrorNotSupported otherwise).
cudaError_t LaunchScatter(ScatterOp op, ElemType type, void* var,
                          const void* updates, int64_t row, const int64_t* rows,
                          const int64_t* offsets, const int64_t* order,
                          int64_t num_rows, cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_STATE_H_
