// The element type of the GPU templates (cwise.h, reduce.h, nn.h) that
// stores a Runnel dtype, for the kernels' OpKernel classes (.cc files).
#ifndef RUNNEL_KERNELS_CUDA_ELEM_TYPE_H_
#define RUNNEL_KERNELS_CUDA_ELEM_TYPE_H_

#include "framework/dtype.h"
#include "kernels/cuda/cwise.h"

namespace runnel {

// The device's element type of a dtype: the same enumerator, as both
// enums are expanded from one table (framework/dtype_table.h).
constexpr cuda::ElemType GpuElemType(DType d) {
  return static_cast<cuda::ElemType>(d);
}
#define RUNNEL_SAME_ORDER(Name, ...)                                    \
  static_assert(GpuElemType(DType::k##Name) == cuda::ElemType::k##Name, \
                "DType and cuda::ElemType disagree on k" #Name);
RUNNEL_DTYPES(RUNNEL_SAME_ORDER)
#undef RUNNEL_SAME_ORDER

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CUDA_ELEM_TYPE_H_
