// GPU kernels of the element-wise ops (the CPU's: kernels/cpu/cwise_*.cc),
// all through the one template of cwise.cu. Registered for the dtypes the
// GPU template takes (cwise.h); any other dtype of these ops has no GPU
// kernel, so the placer keeps it on the CPU.
#include <vector>

#include "base/strings.h"
#include "framework/shape_fns.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cwise.h"
#include "kernels/cuda/elem_type.h"
#include "kernels/cuda/gpu_device.h"

namespace runnel {
namespace {

using cuda::BinaryOp;
using cuda::ElemType;
using cuda::UnaryOp;

// How a and b are read for each element of `out` (their broadcast), with
// neighbouring dims merged where both operands walk them contiguously (or
// both repeat), so that most shapes need one or two dims.
absl::StatusOr<cuda::Broadcast> MakeBroadcast(const Shape& a, const Shape& b,
                                              const Shape& out) {
  const int r = out.rank();
  auto strides = [r](const Shape& s) {
    std::vector<int64_t> st(r, 0);
    int64_t stride = 1;
    for (int i = s.rank() - 1; i >= 0; --i) {
      st[i + r - s.rank()] = s.dim(i) == 1 ? 0 : stride;
      stride *= s.dim(i);
    }
    return st;
  };
  const std::vector<int64_t> as = strides(a), bs = strides(b);
  std::vector<int64_t> dims, sa, sb;  // outermost first
  for (int d = 0; d < r; ++d) {
    const int64_t n = out.dim(d);
    if (n == 1) continue;
    if (!dims.empty() && sa.back() == as[d] * n && sb.back() == bs[d] * n) {
      dims.back() *= n;
      sa.back() = as[d];
      sb.back() = bs[d];
      continue;
    }
    dims.push_back(n);
    sa.push_back(as[d]);
    sb.push_back(bs[d]);
  }
  if (dims.size() > static_cast<size_t>(cuda::kMaxDims)) {
    return absl::UnimplementedError(StrCat(
        "broadcasting ", a.ToString(), " against ", b.ToString(), " needs ",
        dims.size(), " dims on the GPU (at most ", cuda::kMaxDims, ")"));
  }
  cuda::Broadcast bc;
  bc.rank = static_cast<int>(dims.size());
  for (int d = 0; d < bc.rank; ++d) {
    bc.dims[d] = dims[d];
    bc.a_strides[d] = sa[d];
    bc.b_strides[d] = sb[d];
  }
  return bc;
}

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
const std::vector<DType> kFloats = {DType::kF32, DType::kF64, DType::kF16,
                                    DType::kBF16};
const std::vector<DType> kNumbers = {DType::kF32, DType::kF64, DType::kI32,
                                     DType::kI64, DType::kF16, DType::kBF16};
const std::vector<DType> kAll = {DType::kF32, DType::kF64,  DType::kI32,
                                 DType::kI64, DType::kBool, DType::kF16,
                                 DType::kBF16};
const std::vector<DType> kBools = {DType::kBool};

template <BinaryOp kOp>
void Binary(const std::string& op, const std::vector<DType>& dtypes) {
  for (DType d : dtypes) RegisterKernel<BinaryKernel<kOp>>(op, kDeviceGpu, d);
}

template <UnaryOp kOp>
void Unary(const std::string& op, const std::vector<DType>& dtypes) {
  for (DType d : dtypes) RegisterKernel<UnaryKernel<kOp>>(op, kDeviceGpu, d);
}

RUNNEL_STATIC_INIT(GpuCwiseKernels) {
  Binary<BinaryOp::kAdd>("add", kNumbers);
  Binary<BinaryOp::kSub>("sub", kNumbers);
  Binary<BinaryOp::kMul>("mul", kNumbers);
  // Integer div gives a float, and integer floordiv, mod and pow check
  // their operands on the host: those stay on the CPU.
  Binary<BinaryOp::kDiv>("div", kFloats);
  Binary<BinaryOp::kFloorDiv>("floordiv", kFloats);
  Binary<BinaryOp::kMod>("mod", kFloats);
  Binary<BinaryOp::kPow>("pow", kFloats);
  Binary<BinaryOp::kMaximum>("maximum", kNumbers);
  Binary<BinaryOp::kMinimum>("minimum", kNumbers);
  Binary<BinaryOp::kEqual>("equal", kAll);
  Binary<BinaryOp::kNotEqual>("not_equal", kAll);
  Binary<BinaryOp::kLess>("less", kNumbers);
  Binary<BinaryOp::kLessEqual>("less_equal", kNumbers);
  Binary<BinaryOp::kGreater>("greater", kNumbers);
  Binary<BinaryOp::kGreaterEqual>("greater_equal", kNumbers);
  Binary<BinaryOp::kLogicalAnd>("logical_and", kBools);
  Binary<BinaryOp::kLogicalOr>("logical_or", kBools);

  // abs, floor, ceil and round of unsigned or integer tensors stay on the
  // CPU (it forwards them).
  Unary<UnaryOp::kAbs>("abs", kNumbers);
  Unary<UnaryOp::kNeg>("neg", kNumbers);
  Unary<UnaryOp::kSign>("sign", kNumbers);
  Unary<UnaryOp::kSquare>("square", kNumbers);
  Unary<UnaryOp::kRelu>("relu", kNumbers);
  Unary<UnaryOp::kFloor>("floor", kFloats);
  Unary<UnaryOp::kCeil>("ceil", kFloats);
  Unary<UnaryOp::kRound>("round", kFloats);
  Unary<UnaryOp::kIsNan>("isnan", kNumbers);
  Unary<UnaryOp::kIsFinite>("isfinite", kNumbers);
  Unary<UnaryOp::kSqrt>("sqrt", kFloats);
  Unary<UnaryOp::kRsqrt>("rsqrt", kFloats);
  Unary<UnaryOp::kExp>("exp", kFloats);
  Unary<UnaryOp::kLog>("log", kFloats);
  Unary<UnaryOp::kLog1p>("log1p", kFloats);
  Unary<UnaryOp::kSin>("sin", kFloats);
  Unary<UnaryOp::kCos>("cos", kFloats);
  Unary<UnaryOp::kTanh>("tanh", kFloats);
  Unary<UnaryOp::kSigmoid>("sigmoid", kFloats);
  Unary<UnaryOp::kElu>("elu", kFloats);
  Unary<UnaryOp::kSoftplus>("softplus", kFloats);
  Unary<UnaryOp::kErf>("erf", kFloats);
  Unary<UnaryOp::kLogicalNot>("logical_not", kBools);
}

}  // namespace
}  // namespace runnel
