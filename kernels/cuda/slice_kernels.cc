// The GPU's kernels of gather and dynamic_index_add (the CPU's:
// kernels/cpu/slice_kernels.cc). The other slicing ops' kernels are shared
// with the CPU (kernels/common/array_kernels.h, registered in
// array_kernels.cc).
#include "base/strings.h"
#include "framework/kernel.h"
#include "kernels/common/array_kernels.h"
#include "kernels/common/array_util.h"
#include "kernels/cuda/array.h"
#include "kernels/cuda/array_primitives.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cwise.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel {
namespace {

namespace ak = array_kernels;

// gather(params, indices): the indices checked on the host (the CPU's
// error), then copied to the GPU.
class GatherKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(GpuArrays::GatherPlan p,
                        GpuArrays::PlanGather(ctx, ""));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    if (y->num_elements() == 0) return absl::OkStatus();
    RN_ASSIGN_OR_RETURN(Tensor indices, GpuArrays::ToGpu(ctx, p.indices));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchGather(params.raw_data(), indices.data<int64_t>(),
                               y->raw_data(), p.outer, p.n,
                               static_cast<int64_t>(p.indices.size()), p.inner,
                               DTypeSize(params.dtype()), gpu.compute()));
    return absl::OkStatus();
  }
};

// dynamic_index_add(x, index, value): x[index] += value, one element-wise
// add in place.
class DynamicIndexAddKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(auto at, ak::RowUpdate<GpuArrays>(ctx));
    const Tensor& value = ctx->input(2);
    const int64_t row = value.num_elements();
    if (row == 0) return absl::OkStatus();
    const cuda::ElemType type = GpuElemType(value.dtype());
    void* dst =
        ak::At(at.first->raw_data(), at.second * row, DTypeSize(value.dtype()));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchBinary(cuda::BinaryOp::kAdd, type, dst,
                               value.raw_data(), dst, row, nullptr,
                               gpu.compute()));
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(GpuSliceKernels) {
  RegisterKernelForAllTypes<GatherKernel>("gather", kDeviceGpu,
                                          {.inputs = {1}});
  // The CPU's dynamic_index_add has these four.
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
    RegisterKernel<DynamicIndexAddKernel>("dynamic_index_add", kDeviceGpu, d,
                                          {.inputs = {1}});
  }
}

}  // namespace
}  // namespace runnel
