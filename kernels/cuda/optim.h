// The fused optimizer updates on the GPU (optim.cu): one kernel launch per
// update, computing kernels/common/optim_math.h exactly as the CPU does (each
// operation rounded, no fused multiply-add). Plain C++ (nvcc compiles
// optim.cu); the OpKernels are optim_kernels.cc.
#ifndef RUNNEL_KERNELS_CUDA_OPTIM_H_
#define RUNNEL_KERNELS_CUDA_OPTIM_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

// The tensors of one update, all in GPU memory, of `n` elements of `type`
// (f32 or f64; cudaErrorNotSupported otherwise). `old` and `next` are the
// variable then its slots (momentum: buf; adam: m, v); `scalars` the op's
// scalar inputs in its order (framework/ops/optim_ops.cc): sgd lr; momentum
// lr, momentum; adam lr, beta1, 1 - beta1, beta2, 1 - beta2, eps,
// correction1, correction2. Read by the kernel, so they need not be on the
// host.
struct ApplyArgs {
  ElemType type = ElemType::kF32;
  int64_t n = 0;
  const void* old[3] = {};
  void* next[3] = {};
  const void* grad = nullptr;
  // A sparse update: the gradient's elements are rows `rows[j]` (distinct,
  // on the GPU) of `row` elements each, updated in place (old == next).
  const int64_t* rows = nullptr;
  int64_t row = 1;
  const void* scalars[8] = {};
  bool nesterov = false;
};

cudaError_t LaunchApplySgd(const ApplyArgs& a, cudaStream_t stream);
cudaError_t LaunchApplyMomentum(const ApplyArgs& a, cudaStream_t stream);
cudaError_t LaunchApplyAdam(const ApplyArgs& a, cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_OPTIM_H_
