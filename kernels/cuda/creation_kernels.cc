// The GPU's kernel of one_hot (the CPU's: kernels/cpu/creation_kernels.cc).
// fill, zeros_like and ones_like are shared with the CPU
// (kernels/common/array_kernels.h, registered in array_kernels.cc).
#include "base/strings.h"
#include "framework/kernel.h"
#include "kernels/common/array_util.h"
#include "kernels/cuda/array.h"
#include "kernels/cuda/array_primitives.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel {
namespace {

// one_hot(indices): indices (integers, on the GPU) as [outer, inner]
// around the new axis.
class OneHotKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(a_, OneHotAttrs::Of(node));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx, *this));
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    const auto [outer, inner] = a_.OuterInner(indices);
    if (!IsInteger(indices.dtype())) {
      return absl::InvalidArgumentError(
          StrCat("one_hot: indices must be integers, got ",
                 DTypeName(indices.dtype())));
    }
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchOneHot(GpuElemType(indices.dtype()), indices.raw_data(),
                               y->raw_data(), DTypeSize(y->dtype()), outer,
                               a_.depth, inner, a_.on.raw_data(),
                               a_.off.raw_data(), gpu.compute()));
    return absl::OkStatus();
  }

 private:
  OneHotAttrs a_;  // on and off in host memory
};

RUNNEL_STATIC_INIT(GpuCreationKernels) {
  RegisterKernelForAllTypes<OneHotKernel>("one_hot", kDeviceGpu);
}

}  // namespace
}  // namespace runnel
