// The element type (cwise.h) of a dtype for the GPU kernels of variables,
// random numbers and the optimizers' updates (state_kernels.cc,
// random_kernels.cc, optim_kernels.cc), which take f32, f64, i32 and i64;
// and the copy of a variable's value they make on the GPU.
#ifndef RUNNEL_KERNELS_CUDA_GPU_TYPES_H_
#define RUNNEL_KERNELS_CUDA_GPU_TYPES_H_

#include "absl/status/statusor.h"
#include "framework/dtype.h"
#include "framework/tensor.h"
#include "kernels/cuda/cwise.h"

namespace runnel {

// Unimplemented, naming `what` and the dtype, for any other dtype.
absl::StatusOr<cuda::ElemType> GpuNumberType(DType d, const char* what);

class GpuContext;
// A copy of `t` (on `gpu`) in new memory of `gpu`, made on the compute
// stream (after the kernels enqueued so far): the copy an in-place update
// of a variable makes when a reader holds its value (Variable::Mutate).
absl::StatusOr<Tensor> CopyOnGpu(GpuContext& gpu, const Tensor& t);

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CUDA_GPU_TYPES_H_
