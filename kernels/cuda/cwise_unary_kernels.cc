// GPU kernels of the unary element-wise ops (the CPU's:
// kernels/cpu/cwise_unary_kernels.cc).
#include "kernels/cuda/cwise_kernels.h"

namespace runnel::gpu_cwise {

namespace {

RUNNEL_STATIC_INIT(GpuCwiseUnaryKernels) {
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
  Unary<UnaryOp::kGelu>("gelu", kFloats);
  Unary<UnaryOp::kAsin>("asin", kFloats);
  Unary<UnaryOp::kAcos>("acos", kFloats);
  Unary<UnaryOp::kAtan>("atan", kFloats);
  Unary<UnaryOp::kAsinh>("asinh", kFloats);
  Unary<UnaryOp::kAcosh>("acosh", kFloats);
  Unary<UnaryOp::kAtanh>("atanh", kFloats);
  Unary<UnaryOp::kLogicalNot>("logical_not", kBools);
}

}  // namespace
}  // namespace runnel::gpu_cwise
