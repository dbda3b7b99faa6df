// The element type of the GPU templates (cwise.h, reduce.h, nn.h) that
// stores a Runnel dtype, for the kernels' OpKernel classes (.cc files).
#ifndef RUNNEL_KERNELS_CUDA_ELEM_TYPE_H_
#define RUNNEL_KERNELS_CUDA_ELEM_TYPE_H_

#include "absl/status/statusor.h"
#include "base/strings.h"
#include "framework/dtype.h"
#include "kernels/cuda/cwise.h"

namespace runnel {

// Unimplemented, naming `op`, for a dtype the templates do not take (a
// kernel registered only for the dtypes they take never sees one).
inline absl::StatusOr<cuda::ElemType> GpuElemType(DType d,
                                                  std::string_view op) {
  switch (d) {
    case DType::kF32:
      return cuda::ElemType::kF32;
    case DType::kF64:
      return cuda::ElemType::kF64;
    case DType::kI32:
      return cuda::ElemType::kI32;
    case DType::kI64:
      return cuda::ElemType::kI64;
    case DType::kBool:
      return cuda::ElemType::kBool;
    case DType::kF16:
      return cuda::ElemType::kF16;
    case DType::kBF16:
      return cuda::ElemType::kBF16;
    default:
      return absl::UnimplementedError(
          StrCat(op, ": no GPU kernel for ", DTypeName(d)));
  }
}

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CUDA_ELEM_TYPE_H_
