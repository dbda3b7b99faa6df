// The GPU's kernels of gather_grad and tile_grad (the CPU's:
// kernels/cpu/grad_kernels.cc): sums over the rows or tiles of dy.
#include "base/strings.h"
#include "framework/kernel.h"
#include "kernels/common/array_util.h"
#include "kernels/cuda/array.h"
#include "kernels/cuda/array_primitives.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cwise.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel {
namespace {

using Dims = std::vector<int64_t>;

// gather_grad(params, indices, dy).
class GatherGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(GpuArrays::GatherPlan p,
                        GpuArrays::PlanGather(ctx, "gather_grad: "));
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    return GpuArrays::SumRowsByIndex(ctx, ctx->input(2), p.indices, p.outer,
                                     p.n, p.inner, out);
  }
};

// gather_grad_add(x, indices, dy): gather_grad's sums (in a buffer of
// their own), added to x into x's buffer when nothing else holds it.
class GatherGradAddKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(GpuArrays::GatherPlan p,
                        GpuArrays::PlanGather(ctx, "gather_grad_add: "));
    bool forwarded = false;
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->forward_input_or_allocate(
                                        0, 0, x.shape(), &forwarded));
    if (x.num_elements() == 0) return absl::OkStatus();
    Tensor sums(x.dtype(), x.shape(), ctx->device()->allocator());
    RN_RETURN_IF_ERROR(GpuArrays::SumRowsByIndex(ctx, ctx->input(2), p.indices,
                                                 p.outer, p.n, p.inner, &sums));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchBinary(cuda::BinaryOp::kAdd, GpuElemType(x.dtype()),
                               x.raw_data(), sums.raw_data(), y->raw_data(),
                               x.num_elements(), nullptr, gpu.compute()));
    return absl::OkStatus();
  }
};

// tile_grad(dy, x): each element of x's gradient adds its tiles of dy.
class TileGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    if (shape == dy.shape()) return ctx->set_output(0, dy);
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    if (out->num_elements() == 0) return absl::OkStatus();
    if (shape.rank() > cuda::kMaxCopyDims) {
      return absl::UnimplementedError(StrCat("tile_grad: rank ", shape.rank(),
                                             " on the GPU (at most ",
                                             cuda::kMaxCopyDims, ")"));
    }
    const cuda::ElemType type = GpuElemType(dy.dtype());
    cuda::TilePlan plan;
    plan.rank = shape.rank();
    const Dims strides = RowMajorStrides(dy.shape());
    for (int k = 0; k < shape.rank(); ++k) {
      plan.dims[k] = shape.dim(k);
      plan.multiples[k] = dy.dim(k) / shape.dim(k);
      plan.dy_strides[k] = strides[k];
    }
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchTileGrad(type, plan, dy.raw_data(), out->raw_data(),
                                 gpu.compute()));
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(GpuGradKernels) {
  // The element types the GPU's sums have (cwise.h's ElemType but bool),
  // the CPU kernels' own but i8 and u8.
  for (DType d : {DType::kF32, DType::kF64, DType::kI32, DType::kI64,
                  DType::kF16, DType::kBF16}) {
    RegisterKernel<GatherGradKernel>("gather_grad", kDeviceGpu, d,
                                     {.inputs = {1}});
    RegisterKernel<TileGradKernel>("tile_grad", kDeviceGpu, d);
  }
  for (DType d : {DType::kF32, DType::kF64}) {
    RegisterKernel<GatherGradAddKernel>("gather_grad_add", kDeviceGpu, d,
                                        {.inputs = {1}});
  }
}

}  // namespace
}  // namespace runnel
