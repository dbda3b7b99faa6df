// The element-wise CUDA kernels (cwise.cu): one template over an op's
// scalar function, launched over flat or broadcast operands. Plain C++ on
// purpose (no Abseil, no runtime headers), as nvcc compiles cwise.cu; the
// OpKernels that call these live in cwise_kernels.h and cwise_*_kernels.cc.
#ifndef RUNNEL_KERNELS_CUDA_CWISE_H_
#define RUNNEL_KERNELS_CUDA_CWISE_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "framework/dtype_table.h"

namespace runnel::cuda {

// Element types in device code: Runnel's dtypes, in DType's order
// (framework/dtype_table.h), so a DType converts by value. The 16-bit
// floats are computed in f32 and rounded to nearest even once on output,
// as the CPU kernels do.
#define RUNNEL_ELEM_TYPE_ENUMERATOR(Name, ...) k##Name,
enum class ElemType { RUNNEL_DTYPES(RUNNEL_ELEM_TYPE_ENUMERATOR) };
#undef RUNNEL_ELEM_TYPE_ENUMERATOR

// Binary ops, with the CPU kernels' semantics (kernels/cpu/cwise_*.cc):
// integer add/sub/mul wrap; maximum/minimum propagate NaN; floordiv and mod
// round toward negative infinity; the comparisons and logical ops give
// bool. Integer division, floordiv, mod and pow are not here (their
// operands need checks on the host). The gradient ops and
// sigmoid_cross_entropy are element-wise too (kernels/cpu/grad_kernels.cc,
// nn_kernels.cc): relu_grad(dy, x), sigmoid_grad(y, dy), tanh_grad(y, dy),
// gelu_grad(dy, x), sigmoid_cross_entropy(logits, labels).
enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kMod,
  kPow,
  kMaximum,
  kMinimum,
  kReluGrad,
  kSigmoidGrad,
  kTanhGrad,
  kGeluGrad,
  kSigmoidCrossEntropy,
  // From here on the ops give bool (cwise.cu relies on this order).
  kEqual,
  kNotEqual,
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual,
  kLogicalAnd,
  kLogicalOr,
};

enum class UnaryOp {
  kAbs,
  kNeg,
  kSign,
  kSquare,
  kRelu,
  kFloor,
  kCeil,
  kRound,
  kIsNan,
  kIsFinite,
  kSqrt,
  kRsqrt,
  kExp,
  kLog,
  kLog1p,
  kSin,
  kCos,
  kTanh,
  kSigmoid,
  kElu,
  kSoftplus,
  kErf,
  kGelu,
  kAsin,
  kAcos,
  kAtan,
  kAsinh,
  kAcosh,
  kAtanh,
  kLogicalNot,
};

// Operands broadcast against an output of `rank` dims (innermost last):
// element i of the output reads a[sum(index_d * a_strides[d])], and so for
// b. A stride of 0 repeats an operand along that dim.
inline constexpr int kMaxDims = 8;
struct Broadcast {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t a_strides[kMaxDims] = {};
  int64_t b_strides[kMaxDims] = {};
};

// out = op(a, b) over `n` output elements; `bc` nullptr when a, b and out
// have the same shape. Returns the launch's error (cudaErrorNotSupported
// for an op and type it does not take).
cudaError_t LaunchBinary(BinaryOp op, ElemType type, const void* a,
                         const void* b, void* out, int64_t n,
                         const Broadcast* bc, cudaStream_t stream);
cudaError_t LaunchUnary(UnaryOp op, ElemType type, const void* x, void* out,
                        int64_t n, cudaStream_t stream);

}  // namespace runnel::cuda

#endif  // RUNNEL_KERNELS_CUDA_CWISE_H_
