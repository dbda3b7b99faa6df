// What the kernels of the fused normalisations share, on the CPU
// (kernels/cpu/nn_kernels.cc) and the GPU (kernels/cuda/nn_kernels.cc):
// layer_norm, batch_norm and their gradients each give three outputs, the
// first like x and two of the statistics' or the parameters' shape, and the
// forward ones and batch_norm_grad read the node's `eps`.
#ifndef RUNNEL_KERNELS_COMMON_NORM_UTIL_H_
#define RUNNEL_KERNELS_COMMON_NORM_UTIL_H_

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "framework/kernel.h"

namespace runnel {

// y (or dx), then the two per-row or per-channel outputs.
struct NormTensors {
  Tensor* full;
  Tensor* first;
  Tensor* second;
};

// Output 0 of `full`'s shape, outputs 1 and 2 of `part`'s.
inline absl::StatusOr<NormTensors> AllocateNormOutputs(OpKernelContext* ctx,
                                                       const Shape& full,
                                                       const Shape& part) {
  NormTensors out;
  RN_ASSIGN_OR_RETURN(out.full, ctx->allocate_output(0, full));
  RN_ASSIGN_OR_RETURN(out.first, ctx->allocate_output(1, part));
  RN_ASSIGN_OR_RETURN(out.second, ctx->allocate_output(2, part));
  return out;
}

// A kernel of an op with an `eps` attribute.
class EpsKernel : public OpKernel {
 public:
  absl::Status Init(const Node& node) override {
    RN_ASSIGN_OR_RETURN(eps_, node.attr<double>("eps"));
    return absl::OkStatus();
  }

 protected:
  double eps() const { return eps_; }

 private:
  double eps_ = 1e-5;
};

}  // namespace runnel

#endif  // RUNNEL_KERNELS_COMMON_NORM_UTIL_H_
