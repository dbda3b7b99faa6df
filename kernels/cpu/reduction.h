// The `sum` kernel's reduction (reduction_kernels.cc), for other kernels
// that need a sum over axes (sum_to_like, tile_grad).
#ifndef RUNNEL_KERNELS_CPU_REDUCTION_H_
#define RUNNEL_KERNELS_CPU_REDUCTION_H_

#include <vector>

#include "absl/status/status.h"
#include "framework/kernel.h"
#include "framework/tensor.h"

namespace runnel {

// out = the sum of `x` over `axes` (sorted, distinct); `out` holds the kept
// axes' elements row-major, in any shape of that element count. As for
// `sum`, the work is cut by shape alone, so the result does not depend on
// the thread count, and 16-bit floats accumulate in float. T is one of the
// numeric storage types (Half, BFloat16, float, double, int8_t, uint8_t,
// int32_t, int64_t).
template <typename T>
absl::Status SumOverAxes(OpKernelContext* ctx, const Tensor& x,
                         const std::vector<int>& axes, Tensor* out);

}  // namespace runnel

#endif  // RUNNEL_KERNELS_CPU_REDUCTION_H_
