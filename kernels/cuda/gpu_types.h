// The element type (cwise.h) of a dtype for the GPU kernels of variables,
// random numbers and the optimizers' updates (state_kernels.cc,
// random_kernels.cc, optim_kernels.cc), which take f32, f64, i32 and i64.
#ifndef RUNNEL_KERNELS_CUDA_GPU_TYPES_H_
#define RUNNEL_KERNELS_CUDA_GPU_TYPES_H_

#include "absl/status/statusor.h"
#include "kernels/cuda/cwise.h"
#include "runtime/dtype.h"

namespace runnel {

// Unimplemented, naming `what` and the dtype, for any other dtype.
absl::StatusOr<cuda::ElemType> GpuNumberType(DType d, const char* what);

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CUDA_GPU_TYPES_H_
