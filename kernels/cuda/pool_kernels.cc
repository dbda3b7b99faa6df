// max_pool, avg_pool, max_pool_grad and avg_pool_grad on the GPU, through
// Runnel's own CUDA kernels (pool.h says why not cuDNN's), with the CPU
// kernels' geometry and errors (kernels/cpu/conv_kernels.cc).
#include <cstdint>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/pool.h"
#include "runtime/strings.h"
#include "runtime/window.h"

namespace runnel {
namespace {

absl::StatusOr<cuda::PoolType> PoolTypeOf(DType d) {
  switch (d) {
    case DType::kF16:
      return cuda::PoolType::kF16;
    case DType::kBF16:
      return cuda::PoolType::kBF16;
    case DType::kF32:
      return cuda::PoolType::kF32;
    case DType::kF64:
      return cuda::PoolType::kF64;
    case DType::kI32:
      return cuda::PoolType::kI32;
    case DType::kI64:
      return cuda::PoolType::kI64;
    default:
      return absl::UnimplementedError(
          StrCat("no GPU pooling for ", DTypeName(d)));
  }
}

class GpuPoolBase : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_, ReadPoolAttrs(node.attrs()));
    return absl::OkStatus();
  }

 protected:
  // Where the windows fall on NHWC `x`; errors begin with `who`, as on the
  // CPU.
  absl::StatusOr<cuda::PoolGeometry> Place(const Tensor& x,
                                           std::string_view who) const {
    if (x.rank() != 4) {
      return absl::InvalidArgumentError(
          StrCat(who, " needs an NHWC input of rank 4, got ",
                 DTypeName(x.dtype()), x.shape().ToString()));
    }
    RN_ASSIGN_OR_RETURN(
        Windows rows, PlaceWindows(x.dim(1), attrs_.size.h, attrs_.strides.h, 1,
                                   attrs_.same, "window"));
    RN_ASSIGN_OR_RETURN(
        Windows cols, PlaceWindows(x.dim(2), attrs_.size.w, attrs_.strides.w, 1,
                                   attrs_.same, "window"));
    return cuda::PoolGeometry{
        x.dim(0),         x.dim(1),         x.dim(2),       x.dim(3),
        rows.out,         cols.out,         attrs_.size.h,  attrs_.size.w,
        attrs_.strides.h, attrs_.strides.w, rows.pad_begin, cols.pad_begin};
  }

  static Shape OutShape(const cuda::PoolGeometry& g) {
    return Shape{g.batch, g.out_h, g.out_w, g.chans};
  }

 private:
  PoolAttrs attrs_;
};

template <bool kMax>
class GpuPoolKernel : public GpuPoolBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(const cuda::PoolType type, PoolTypeOf(x.dtype()));
    RN_ASSIGN_OR_RETURN(const cuda::PoolGeometry g, Place(x, "pooling"));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, OutShape(g)));
    if (y->num_elements() == 0) return absl::OkStatus();
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchPool(kMax, type, g, x.raw_data(), y->raw_data(),
                             gpu.compute()));
    return absl::OkStatus();
  }
};

// max_pool_grad (x, y, dy) and avg_pool_grad (x, dy). Like the CPU kernel,
// max_pool_grad finds the maxima in x again rather than trusting y.
template <bool kMax>
class GpuPoolGradKernel : public GpuPoolBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& dy = ctx->input(ctx->num_inputs() - 1);
    RN_ASSIGN_OR_RETURN(const cuda::PoolType type, PoolTypeOf(x.dtype()));
    RN_ASSIGN_OR_RETURN(const cuda::PoolGeometry g,
                        Place(x, StrCat(ctx->node().op(), ":")));
    const Shape y_shape = OutShape(g);
    if (dy.shape() != y_shape) {
      return absl::InvalidArgumentError(
          StrCat(ctx->node().op(), ": dy ", DTypeName(dy.dtype()),
                 dy.shape().ToString(), " does not match the forward output ",
                 y_shape.ToString()));
    }
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->allocate_output(0, x.shape()));
    if (dx->num_elements() == 0) return absl::OkStatus();
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    if constexpr (kMax) {
      // Each output's argmax, freed back to the compute stream's pool once
      // the kernels using it are enqueued.
      Tensor argmax;
      try {
        argmax = Tensor(DType::kI64, y_shape, ctx->device()->allocator());
      } catch (const AllocationFailed& e) {
        return absl::ResourceExhaustedError(StrCat(
            ctx->node().op(), ": ", OutOfMemoryMessage(e.bytes(), e.detail())));
      }
      RN_CUDA(cuda::LaunchMaxPoolGrad(type, g, x.raw_data(), dy.raw_data(),
                                      static_cast<int64_t*>(argmax.raw_data()),
                                      dx->raw_data(), gpu.compute()));
    } else {
      RN_CUDA(cuda::LaunchAvgPoolGrad(type, g, dy.raw_data(), dx->raw_data(),
                                      gpu.compute()));
    }
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(GpuPoolKernels) {
  for (DType d : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
    RegisterKernel<GpuPoolKernel<true>>("max_pool", kDeviceGpu, d);
    RegisterKernel<GpuPoolKernel<false>>("avg_pool", kDeviceGpu, d);
    RegisterKernel<GpuPoolGradKernel<true>>("max_pool_grad", kDeviceGpu, d);
    RegisterKernel<GpuPoolGradKernel<false>>("avg_pool_grad", kDeviceGpu, d);
  }
  for (DType d : {DType::kI32, DType::kI64}) {
    RegisterKernel<GpuPoolKernel<true>>("max_pool", kDeviceGpu, d);
  }
}

}  // namespace
}  // namespace runnel
