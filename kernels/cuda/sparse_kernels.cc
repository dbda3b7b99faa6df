// The GPU's kernel of unsorted_segment_sum (the CPU's:
// kernels/cpu/sparse_kernels.cc).
#include "base/strings.h"
#include "framework/kernel.h"
#include "kernels/common/array_util.h"
#include "kernels/cuda/array_primitives.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel {
namespace {

// unsorted_segment_sum(data, segment_ids, num_segments), checked on the
// host as on the CPU (the ids are in host memory).
class SegmentSumKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    RN_ASSIGN_OR_RETURN(SegmentSumPlan plan,
                        PlanSegmentSum(data, ctx->input(1), ctx->input(2)));
    RN_ASSIGN_OR_RETURN(Tensor * y,
                        ctx->allocate_output(0, plan.output_shape()));
    return GpuArrays::SumRowsByIndex(ctx, data, plan.ids, 1, plan.num,
                                     plan.row_size(), y);
  }
};

RUNNEL_STATIC_INIT(GpuSparseKernels) {
  // The element types the GPU's sums have, as gather_grad's.
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16}) {
    RegisterKernel<SegmentSumKernel>("unsorted_segment_sum", kDeviceGpu, d,
                                     {.inputs = {1, 2}});
  }
}

}  // namespace
}  // namespace runnel
