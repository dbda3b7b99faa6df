// cast on the GPU (cast.cu), for every pair of dtypes the CPU's kernel
// takes, f16 and bf16 included (so an f16 transfer's casts,
// common_runtime/partition.cc, run on the GPU beside their producers and
// consumers).
#include "kernels/cuda/cast.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel {
namespace {

// DType and CastType list the dtypes in the same order.
cuda::CastType CastTypeOf(DType d) {
  return static_cast<cuda::CastType>(static_cast<int>(d));
}
static_assert(static_cast<int>(DType::kBool) ==
              static_cast<int>(cuda::CastType::kBool));
static_assert(static_cast<int>(DType::kF16) ==
              static_cast<int>(cuda::CastType::kF16));

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
    RN_CUDA(cuda::LaunchCast(CastTypeOf(x.dtype()), CastTypeOf(to_),
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
