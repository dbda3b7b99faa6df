// CUDA and cuBLASLt results as absl::Status, naming the call that failed:
//
//   RN_CUDA(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream));
//   RN_CUBLAS(cublasLtMatmul(...));
//
// return "cudaMemcpyAsync: out of memory (cudaErrorMemoryAllocation)" from
// the enclosing function (which returns absl::Status or StatusOr) when the
// call fails. Every CUDA call in kernels/cuda goes through one of them.
#ifndef RUNNEL_KERNELS_CUDA_CUDA_STATUS_H_
#define RUNNEL_KERNELS_CUDA_CUDA_STATUS_H_

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string_view>

#include "absl/status/status.h"
#include "base/status_macros.h"

namespace runnel {

// `call` is the call's source text; the message names the function.
absl::Status CudaStatus(cudaError_t e, const char* call);
// The function's name in a call's source text: "cublasLtMatmul" for
// "lt->cublasLtMatmul(a, b)" (or "lt.cublasLtMatmul(...)").
std::string_view CalledFunction(const char* call);
absl::Status CublasStatus(cublasStatus_t s, const char* call);

}  // namespace runnel

#define RN_CUDA(expr) RN_RETURN_IF_ERROR(::runnel::CudaStatus((expr), #expr))
#define RN_CUBLAS(expr) \
  RN_RETURN_IF_ERROR(::runnel::CublasStatus((expr), #expr))

#endif  // RUNNEL_KERNELS_CUDA_CUDA_STATUS_H_
