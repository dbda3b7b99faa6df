// The GPU reductions (reduce.cu): one scheme for every reduction op, over
// an input viewed as [outer, reduced, inner] (framework/reduce_layout.h), with
// the CPU kernels' semantics (kernels/cpu/reduction_kernels.cc). Plain C++, as
// nvcc compiles reduce.cu; the OpKernels live in reduction_kernels.cc.
#ifndef RUNNEL_KERNELS_CUDA_REDUCE_H_
#define RUNNEL_KERNELS_CUDA_REDUCE_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cwise.h"

namespace runnel::cuda {

// The ops and what they accumulate in: f32 for f16, bf16 and f32, f64 for
// f64; integer sum and prod wrap; the integer mean sums in i64 and
// truncates toward zero; max, min, argmax and argmin propagate NaN (the
// first NaN is the extreme); argmax/argmin give the i32 index of the first
// extreme; logsumexp is m + log(sum(exp(x - m))) with m the max (m itself
// where m is not finite); kL2Loss is l2_loss, sum(x^2) / 2, summed in f64.
enum class ReduceOp {
  kSum,
  kMean,
  kProd,
  kMax,
  kMin,
  kAll,
  kAny,
  kLogSumExp,
  kArgMax,
  kArgMin,
  kL2Loss,
};

// out[o * inner + j] = the reduction of in[(o * reduced + r) * inner + j]
// over r, for outer * inner outputs. reduced == 0 gives the identity (0 for
// sum, 1 for prod, NaN for the float mean, true for all, false for any,
// -inf for logsumexp); the host rejects it for the ops without one (max,
// min, argmax, argmin, the integer mean). `scratch` holds
// ReduceScratchBytes(outer, reduced, inner, op == kLogSumExp) bytes (see
// reduce_plan.h). cudaErrorNotSupported for an op and type it does not take.
cudaError_t LaunchReduce(ReduceOp op, ElemType type, const void* in, void* out,
                         int64_t outer, int64_t reduced, int64_t inner,
                         void* scratch, cudaStream_t stream);

// out (n elements of `elem_bytes`: 1, 2, 4 or 8) = in read with `strides`
// (in elements) along `dims` (row-major, outermost first; at most
// kMaxPermuteDims): a permuted copy.
inline constexpr int kMaxPermuteDims = 16;
cudaError_t LaunchPermute(int elem_bytes, const void* in, void* out, int64_t n,
                          int rank, const int64_t* dims, const int64_t* strides,
                          cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_REDUCE_H_
