// max_pool, avg_pool, max_pool_grad and avg_pool_grad on the GPU, with the
// CPU kernels' geometry and errors (framework/window.h's PlacePoolWindows):
// through cuDNN's legacy pooling where it gives the CPU's results
// (pool_plan.h says where and why), through Runnel's own kernels (pool.h)
// everywhere else, and also when cuDNN cannot be loaded or refuses a shape
// (CUDNN_STATUS_NOT_SUPPORTED): pooling never needs cuDNN.
#include <cstdint>
#include <mutex>
#include <optional>

#include "base/strings.h"
#include "framework/window.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cudnn.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/pool.h"
#include "kernels/cuda/pool_plan.h"

namespace runnel {
namespace {

// The descriptors of one cuDNN pooling call.
struct PoolDescriptors {
  CudnnTensorDesc x, y;
  CudnnPoolDesc pool;
};

// `max`: CUDNN_POOLING_MAX_DETERMINISTIC ignoring NaN (as the CPU does);
// else an average over the window's elements inside the input, the CPU's
// divisor. The pooling descriptor takes (h, w) pairs: window, padding
// (each side), stride.
absl::StatusOr<PoolDescriptors> DescribePool(const Cudnn& dnn, bool max,
                                             DType dtype,
                                             const CudnnPoolParams& p) {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  if (dtype == DType::kF16) {
    type = CUDNN_DATA_HALF;
  } else if (dtype == DType::kF64) {
    type = CUDNN_DATA_DOUBLE;
  } else if (dtype != DType::kF32) {
    return absl::InternalError(
        StrCat("no cuDNN pooling for ", DTypeName(dtype)));
  }
  PoolDescriptors d;
  RN_ASSIGN_OR_RETURN(
      d.x, MakeNhwcDesc(dnn, type, p.batch, p.in_h, p.in_w, p.chans));
  RN_ASSIGN_OR_RETURN(
      d.y, MakeNhwcDesc(dnn, type, p.batch, p.out_h, p.out_w, p.chans));
  cudnnPoolingDescriptor_t raw = nullptr;
  RN_CUDNN(dnn.cudnnCreatePoolingDescriptor(&raw));
  d.pool.reset(raw);
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  RN_CUDNN(dnn.cudnnSetPooling2dDescriptor(
      raw,
      max ? CUDNN_POOLING_MAX_DETERMINISTIC
          : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
      CUDNN_NOT_PROPAGATE_NAN, i(p.size.h), i(p.size.w), i(p.pad_h), i(p.pad_w),
      i(p.strides.h), i(p.strides.w)));
  // cuDNN's windows must be ours (pool_plan.h).
  int n = 0, c = 0, h = 0, w = 0;
  RN_CUDNN(
      dnn.cudnnGetPooling2dForwardOutputDim(raw, d.x.get(), &n, &c, &h, &w));
  if (n != p.batch || c != p.chans || h != p.out_h || w != p.out_w) {
    return absl::InternalError(
        StrCat("cuDNN's pooling gives ", n, "x", h, "x", w, "x", c, " where [",
               p.batch, ",", p.out_h, ",", p.out_w, ",", p.chans,
               "] is expected (window ", p.size.h, "x", p.size.w, ", stride ",
               p.strides.h, "x", p.strides.w, ", padding ", p.pad_h, ", ",
               p.pad_w, ")"));
  }
  return d;
}

// cuDNN's alpha (1) and beta (0): double for f64, float for f32 and f16.
const void* ScaleOne(DType dtype) {
  static constexpr float kF = 1;
  static constexpr double kD = 1;
  return dtype == DType::kF64 ? static_cast<const void*>(&kD) : &kF;
}
const void* ScaleZero(DType dtype) {
  static constexpr float kF = 0;
  static constexpr double kD = 0;
  return dtype == DType::kF64 ? static_cast<const void*>(&kD) : &kF;
}

class GpuPoolBase : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(attrs_,
                        ReadPoolAttrs(node.attrs(), WindowRank(node.op())));
    return absl::OkStatus();
  }

 protected:
  // Where the windows fall on NHWC `x`; errors begin with `who`, as on the
  // CPU.
  absl::StatusOr<PoolWindows> Place(const Tensor& x,
                                    std::string_view who) const {
    return PlacePoolWindows(x.dtype(), x.shape(), attrs_, who);
  }

  // The geometry our own kernels take.
  cuda::PoolGeometry Geometry(const PoolWindows& w) const {
    return cuda::PoolGeometry{w.batch,
                              w.in_h,
                              w.in_w,
                              w.chans,
                              w.rows.out,
                              w.cols.out,
                              attrs_.size.h,
                              attrs_.size.w,
                              attrs_.strides.h,
                              attrs_.strides.w,
                              w.rows.pad_begin,
                              w.cols.pad_begin,
                              attrs_.dilations.h,
                              attrs_.dilations.w,
                              w.in_d,
                              w.depths.out,
                              attrs_.size.d,
                              attrs_.strides.d,
                              w.depths.pad_begin,
                              attrs_.dilations.d};
  }

  // Runs `call(dnn, handle, descriptors)` (a pooling call) with the handle
  // held when cuDNN computes `op` as the CPU does (CudnnPoolPlan) and can
  // be loaded. False when our own kernels must run instead: no plan, no
  // cuDNN, or cuDNN does not support the call.
  template <typename Call>
  absl::StatusOr<bool> RunCudnn(GpuContext& gpu, PoolOp op, DType dtype,
                                const PoolWindows& w, const char* name,
                                const Call& call) const {
    const std::optional<CudnnPoolParams> plan =
        CudnnPoolPlan(op, dtype, w, attrs_);
    if (!plan.has_value()) return false;
    const absl::StatusOr<cudnnHandle_t> handle = gpu.dnn();
    if (!handle.ok()) return false;
    const Cudnn& dnn = gpu.cudnn();
    const bool max = op == PoolOp::kMaxPool || op == PoolOp::kMaxPoolGrad;
    RN_ASSIGN_OR_RETURN(const PoolDescriptors d,
                        DescribePool(dnn, max, dtype, *plan));
    std::lock_guard<std::mutex> lock(gpu.dnn_mutex());
    const cudnnStatus_t s = call(dnn, *handle, d);
    if (s == CUDNN_STATUS_NOT_SUPPORTED) return false;
    RN_RETURN_IF_ERROR(CudnnStatus(s, name));
    return true;
  }

 private:
  PoolAttrs attrs_;
};

template <bool kMax>
class GpuPoolKernel : public GpuPoolBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const cuda::ElemType type = GpuElemType(x.dtype());
    RN_ASSIGN_OR_RETURN(const PoolWindows w, Place(x, "pooling"));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, w.y()));
    if (y->num_elements() == 0) return absl::OkStatus();
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    const DType dtype = x.dtype();
    RN_ASSIGN_OR_RETURN(
        const bool by_cudnn,
        RunCudnn(
            gpu, kMax ? PoolOp::kMaxPool : PoolOp::kAvgPool, dtype, w,
            "cudnnPoolingForward",
            [&](const Cudnn& dnn, cudnnHandle_t h, const PoolDescriptors& d) {
              return dnn.cudnnPoolingForward(
                  h, d.pool.get(), ScaleOne(dtype), d.x.get(), x.raw_data(),
                  ScaleZero(dtype), d.y.get(), y->raw_data());
            }));
    if (!by_cudnn) {
      RN_CUDA(cuda::LaunchPool(kMax, type, Geometry(w), x.raw_data(),
                               y->raw_data(), gpu.compute()));
    } else if (kMax) {
      // A window of NaN and -inf only: the CPU's lowest value.
      RN_CUDA(cuda::LaunchMaxPoolFloor(type, y->num_elements(), y->raw_data(),
                                       gpu.compute()));
    }
    return absl::OkStatus();
  }
};

// max_pool_with_argmax: our own kernels (cuDNN gives no positions).
class GpuMaxPoolWithArgmaxKernel : public GpuPoolBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(const PoolWindows w, Place(x, "pooling"));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, w.y()));
    RN_ASSIGN_OR_RETURN(Tensor * argmax, ctx->allocate_output(1, w.y()));
    if (y->num_elements() == 0) return absl::OkStatus();
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchMaxPoolWithArgmax(
        GpuElemType(x.dtype()), Geometry(w), x.raw_data(), y->raw_data(),
        argmax->data<int64_t>(), gpu.compute()));
    return absl::OkStatus();
  }
};

// max_pool_grad (x, y, dy) and avg_pool_grad (x, dy). Like the CPU kernel,
// max_pool_grad finds the maxima in x again rather than trusting y, with
// our own kernels always (pool_plan.h: cuDNN's choice among equal maxima
// is not documented). avg_pool_grad goes through cuDNN where the plan
// allows.
template <bool kMax>
class GpuPoolGradKernel : public GpuPoolBase {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& dy = ctx->input(ctx->num_inputs() - 1);
    const cuda::ElemType type = GpuElemType(x.dtype());
    RN_ASSIGN_OR_RETURN(const PoolWindows w,
                        Place(x, StrCat(ctx->node().op(), ":")));
    RN_RETURN_IF_ERROR(
        CheckWindowsDy(ctx->node().op(), dy.dtype(), dy.shape(), w.y()));
    RN_ASSIGN_OR_RETURN(Tensor * dx, ctx->allocate_output(0, x.shape()));
    if (dx->num_elements() == 0) return absl::OkStatus();
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    const cuda::PoolGeometry g = Geometry(w);
    if constexpr (kMax) {
      // Each output's argmax, freed back to the compute stream's pool once
      // the kernels using it are enqueued.
      RN_ASSIGN_OR_RETURN(Tensor argmax, GpuScratch(ctx, DType::kI64, w.y()));
      RN_CUDA(cuda::LaunchMaxPoolGrad(type, g, x.raw_data(), dy.raw_data(),
                                      static_cast<int64_t*>(argmax.raw_data()),
                                      dx->raw_data(), gpu.compute()));
    } else {
      const DType dtype = x.dtype();
      // cuDNN's backward takes the forward output y too, which an average's
      // gradient does not depend on; avg_pool_grad has no y, so dy (y's
      // shape) stands in for it.
      RN_ASSIGN_OR_RETURN(
          const bool by_cudnn,
          RunCudnn(
              gpu, PoolOp::kAvgPoolGrad, dtype, w, "cudnnPoolingBackward",
              [&](const Cudnn& dnn, cudnnHandle_t h, const PoolDescriptors& d) {
                return dnn.cudnnPoolingBackward(
                    h, d.pool.get(), ScaleOne(dtype), d.y.get(), dy.raw_data(),
                    d.y.get(), dy.raw_data(), d.x.get(), x.raw_data(),
                    ScaleZero(dtype), d.x.get(), dx->raw_data());
              }));
      if (!by_cudnn) {
        RN_CUDA(cuda::LaunchAvgPoolGrad(type, g, dy.raw_data(), dx->raw_data(),
                                        gpu.compute()));
      }
    }
    return absl::OkStatus();
  }
};

RUNNEL_STATIC_INIT(GpuPoolKernels) {
  // The 3-D pools run on our own kernels only (CudnnPoolPlan).
  for (const char* dims : {"", "3d"}) {
    for (DType d : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
      RegisterKernel<GpuPoolKernel<true>>(StrCat("max_pool", dims), kDeviceGpu,
                                          d);
      RegisterKernel<GpuPoolKernel<false>>(StrCat("avg_pool", dims), kDeviceGpu,
                                           d);
      RegisterKernel<GpuPoolGradKernel<true>>(StrCat("max_pool", dims, "_grad"),
                                              kDeviceGpu, d);
      RegisterKernel<GpuPoolGradKernel<false>>(
          StrCat("avg_pool", dims, "_grad"), kDeviceGpu, d);
    }
    for (DType d : {DType::kI32, DType::kI64}) {
      RegisterKernel<GpuPoolKernel<true>>(StrCat("max_pool", dims), kDeviceGpu,
                                          d);
    }
  }
  for (DType d : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64,
                  DType::kI32, DType::kI64}) {
    RegisterKernel<GpuMaxPoolWithArgmaxKernel>("max_pool_with_argmax",
                                               kDeviceGpu, d);
  }
}

}  // namespace
}  // namespace runnel
