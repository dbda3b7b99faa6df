// GPU kernels of the fused optimizer updates (framework/ops/optim_ops.cc; the
// CPU's: kernels/cpu/optim_kernels.cc): one launch of optim.cu per update,
// its scalars read by the kernel where they are, on the GPU; the sparse
// updates' rows read on the host (checked there) and copied to the GPU.
// f32, f64, f16 and bf16 (computed in f32 and rounded after each
// operation, as on the CPU).
#include "kernels/common/variable_util.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/gpu_types.h"
#include "kernels/cuda/optim.h"

namespace runnel {
namespace {

template <ApplyRule kRule>
class GpuApplyKernel : public ApplyKernelBase {
 public:
  GpuApplyKernel() : ApplyKernelBase(kRule) {}

 protected:
  absl::Status Write(OpKernelContext* ctx, const VariableUpdate& u,
                     const Tensor& grad,
                     const std::vector<const Tensor*>& scalars,
                     const std::vector<int64_t>* rows) override {
    GpuContext& gpu = GpuContextOf(ctx);
    cuda::ApplyArgs a;
    // A sparse update's rows (checked on the host), on the GPU until the
    // kernel has run: freed to the compute stream's pool.
    Tensor rows_gpu;
    if (rows != nullptr && !rows->empty()) {
      RN_ASSIGN_OR_RETURN(
          rows_gpu, gpu.FromHost(Tensor::FromVector(
                        *rows, Shape{static_cast<int64_t>(rows->size())})));
      a.rows = rows_gpu.data<int64_t>();
      a.row = grad.num_elements() / static_cast<int64_t>(rows->size());
    }
    a.type = GpuElemType(grad.dtype());
    a.n = grad.num_elements();
    for (size_t i = 0; i < u.old.size(); ++i) {
      a.old[i] = u.old[i]->raw_data();
      a.next[i] = u.next[i]->raw_data();
    }
    a.grad = grad.raw_data();
    for (size_t i = 0; i < scalars.size(); ++i) {
      a.scalars[i] = scalars[i]->raw_data();
    }
    a.nesterov = nesterov();
    RN_RETURN_IF_ERROR(gpu.Activate());
    switch (kRule) {
      case ApplyRule::kSgd:
        RN_CUDA(cuda::LaunchApplySgd(a, gpu.compute()));
        break;
      case ApplyRule::kMomentum:
        RN_CUDA(cuda::LaunchApplyMomentum(a, gpu.compute()));
        break;
      case ApplyRule::kAdam:
        RN_CUDA(cuda::LaunchApplyAdam(a, gpu.compute()));
        break;
    }
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor> CopyValue(OpKernelContext* ctx,
                                   const Tensor& value) override {
    return CopyOnGpu(GpuContextOf(ctx), value);
  }
};

RUNNEL_STATIC_INIT(GpuOptimKernels) {
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    RegisterKernel<GpuApplyKernel<ApplyRule::kSgd>>("apply_sgd", kDeviceGpu, d);
    RegisterKernel<GpuApplyKernel<ApplyRule::kMomentum>>("apply_momentum",
                                                         kDeviceGpu, d);
    RegisterKernel<GpuApplyKernel<ApplyRule::kAdam>>("apply_adam", kDeviceGpu,
                                                     d);
    // The indices (after ref*, lr and grad) are read on the host.
    RegisterKernel<GpuApplyKernel<ApplyRule::kMomentum>>(
        "sparse_apply_momentum", kDeviceGpu, d, {.inputs = {4}});
    RegisterKernel<GpuApplyKernel<ApplyRule::kAdam>>(
        "sparse_apply_adam", kDeviceGpu, d, {.inputs = {5}});
  }
}

}  // namespace
}  // namespace runnel
