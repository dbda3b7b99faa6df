// The GPU kernels of the element-wise ops, one template each for binary
// and unary ops over cwise.cu's launchers, and their registration. The
// files follow the CPU's (kernels/cpu/cwise_*.cc): cwise_binary_kernels.cc
// (arithmetic), cwise_compare_kernels.cc (comparisons and logical and/or),
// cwise_unary_kernels.cc. Registered for the dtypes the GPU template takes
// (cwise.h); any other dtype of these ops has no GPU kernel, so the placer
// keeps it on the CPU.
#ifndef RUNNEL_KERNELS_CUDA_CWISE_KERNELS_H_
#define RUNNEL_KERNELS_CUDA_CWISE_KERNELS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/kernel.h"
#include "framework/shape_fns.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cwise.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel::gpu_cwise {

using cuda::BinaryOp;
using cuda::ElemType;
using cuda::UnaryOp;

// How a and b are read for each element of `out` (their broadcast), with
// neighbouring dims merged where both operands walk them contiguously (or
// both repeat), so that most shapes need one or two dims.
absl::StatusOr<cuda::Broadcast> MakeBroadcast(const Shape& a, const Shape& b,
                                              const Shape& out);

template <BinaryOp kOp>
class BinaryKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    const ElemType type = GpuElemType(x.dtype());
    RN_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(x.shape(), y.shape()));
    cuda::Broadcast bc;
    const bool same = x.shape() == y.shape();
    if (!same) {
      RN_ASSIGN_OR_RETURN(bc, MakeBroadcast(x.shape(), y.shape(), shape));
    }
    RN_ASSIGN_OR_RETURN(Tensor * z, ctx->allocate_output(0, std::move(shape)));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchBinary(kOp, type, x.raw_data(), y.raw_data(),
                               z->raw_data(), z->num_elements(),
                               same ? nullptr : &bc, gpu.compute()));
    return absl::OkStatus();
  }
};

template <UnaryOp kOp>
class UnaryKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const ElemType type = GpuElemType(x.dtype());
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    GpuContext& gpu = GpuContextOf(ctx);
    RN_RETURN_IF_ERROR(gpu.Activate());
    RN_CUDA(cuda::LaunchUnary(kOp, type, x.raw_data(), y->raw_data(),
                              x.num_elements(), gpu.compute()));
    return absl::OkStatus();
  }
};

// The 16-bit floats wherever the CPU takes them (every float op).
inline const std::vector<DType> kFloats = {DType::kF32, DType::kF64,
                                           DType::kF16, DType::kBF16};
inline const std::vector<DType> kNumbers = {DType::kF32, DType::kF64,
                                            DType::kI32, DType::kI64,
                                            DType::kF16, DType::kBF16};
inline const std::vector<DType> kAll = {DType::kF32, DType::kF64,  DType::kI32,
                                        DType::kI64, DType::kBool, DType::kF16,
                                        DType::kBF16};
inline const std::vector<DType> kBools = {DType::kBool};

template <BinaryOp kOp>
void Binary(const std::string& op, const std::vector<DType>& dtypes) {
  for (DType d : dtypes) RegisterKernel<BinaryKernel<kOp>>(op, kDeviceGpu, d);
}

template <UnaryOp kOp>
void Unary(const std::string& op, const std::vector<DType>& dtypes) {
  for (DType d : dtypes) RegisterKernel<UnaryKernel<kOp>>(op, kDeviceGpu, d);
}

}  // namespace runnel::gpu_cwise

#endif  // RUNNEL_KERNELS_CUDA_CWISE_KERNELS_H_
