// cast on the GPU (cast.cu), for every pair of dtypes the CPU's kernel
// takes, f16 and bf16 included (so an f16 transfer's casts,
// common_runtime/partition.cc, run on the GPU beside their producers and
// consumers).
#include "kernels/cuda/cast.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel {
namespace {

class CastKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(to_, node.attr<DType>("dtype"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (to_ == x.dtype()) return ctx->set_output(0, x);
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchCast(GpuElemType(x.dtype()), GpuElemType(to_),
                             x.raw_data(), y->raw_data(), x.num_elements(),
                             gpu.compute()));
    return absl::OkStatus();
  }

 private:
  DType to_ = DType::kF32;
};

RUNNEL_STATIC_INIT(GpuCastKernels) {
  RegisterKernelForAllTypes<CastKernel>("cast", kDeviceGpu);
}

}  // namespace
}  // namespace runnel
