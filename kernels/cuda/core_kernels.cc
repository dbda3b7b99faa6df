// const on the GPU: the partitioner copies constants to the devices that
// use them, and control edges cross devices as constant tokens. (identity,
// stop_gradient, noop, _send and _recv touch no memory: the CPU's kernels
// serve the GPU, kernels/cpu/core_kernels.cc.)
#include <mutex>

#include "base/strings.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel {
namespace {

// The value, copied to the GPU on the first run and kept for later ones.
class ConstKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(value_, node.attr<Tensor>("value"));
    return absl::OkStatus();
  }
  absl::Status Compute(OpKernelContext* ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (on_gpu_.empty()) {
      RN_ASSIGN_OR_RETURN(on_gpu_, GpuContextOf(ctx).FromHost(value_));
    }
    return ctx->set_output(0, on_gpu_);
  }
  bool IsExpensive() const override { return false; }

 private:
  Tensor value_;
  std::mutex mu_;
  Tensor on_gpu_;
};

RUNNEL_STATIC_INIT(GpuCoreKernels) {
  RegisterKernelForAllTypes<ConstKernel>("const", kDeviceGpu);
}

}  // namespace
}  // namespace runnel
