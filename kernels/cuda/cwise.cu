// The element-wise kernels (cwise.h): one grid-stride template per arity,
// instantiated for each op and the element types it takes. The scalar
// functions follow the CPU kernels (kernels/cpu/cwise_*_kernels.cc)
// operation for operation, so that results agree within rounding. f16 and
// bf16 are loaded as f32, computed in f32 and rounded to nearest even on
// store, as the CPU kernels widen and narrow them.
#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/cwise.h"
#include "kernels/cuda/elem.cuh"
#include "kernels/cuda/launch.cuh"

namespace runnel::cuda {
namespace {

// The math library's float and double functions under one name.
#define RN_MATH1(Name, fn)                                            \
  __device__ __forceinline__ float Name(float x) { return fn##f(x); } \
  __device__ __forceinline__ double Name(double x) { return fn(x); }
RN_MATH1(Fabs, fabs)
RN_MATH1(Floor, floor)
RN_MATH1(Ceil, ceil)
RN_MATH1(Rint, rint)
RN_MATH1(Sqrt, sqrt)
RN_MATH1(Exp, exp)
RN_MATH1(Expm1, expm1)
RN_MATH1(Log, log)
RN_MATH1(Log1p, log1p)
RN_MATH1(Sin, sin)
RN_MATH1(Cos, cos)
RN_MATH1(Tanh, tanh)
RN_MATH1(Erf, erf)
RN_MATH1(Asin, asin)
RN_MATH1(Acos, acos)
RN_MATH1(Atan, atan)
RN_MATH1(Asinh, asinh)
RN_MATH1(Acosh, acosh)
RN_MATH1(Atanh, atanh)
#undef RN_MATH1
__device__ __forceinline__ float Fmod(float x, float y) { return fmodf(x, y); }
__device__ __forceinline__ double Fmod(double x, double y) {
  return fmod(x, y);
}
__device__ __forceinline__ float Pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double Pow(double x, double y) { return pow(x, y); }

// Eigen's maxi/mini after its NaN check (PropagateNaN): the first NaN wins.
template <typename T>
__device__ __forceinline__ T MaxNaN(T a, T b) {
  if constexpr (kFloat<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? b : a;
}
template <typename T>
__device__ __forceinline__ T MinNaN(T a, T b) {
  if constexpr (kFloat<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return b < a ? b : a;
}

// What each op gives: bool for comparisons and logic, else its operands'
// type.
template <BinaryOp kOp, typename T>
using BinaryOut = std::conditional_t<(kOp >= BinaryOp::kEqual), bool, T>;
template <UnaryOp kOp, typename T>
using UnaryOut =
    std::conditional_t<kOp == UnaryOp::kIsNan || kOp == UnaryOp::kIsFinite ||
                           kOp == UnaryOp::kLogicalNot,
                       bool, T>;

template <BinaryOp kOp, typename T>
constexpr bool Takes() {
  switch (kOp) {
    case BinaryOp::kAdd:
    case BinaryOp::kSub:
    case BinaryOp::kMul:
    case BinaryOp::kMaximum:
    case BinaryOp::kMinimum:
    case BinaryOp::kLess:
    case BinaryOp::kLessEqual:
    case BinaryOp::kGreater:
    case BinaryOp::kGreaterEqual:
      return kNumber<T>;
    case BinaryOp::kReluGrad:
      return kNumber<T>;
    case BinaryOp::kDiv:
    case BinaryOp::kFloorDiv:
    case BinaryOp::kMod:
    case BinaryOp::kPow:
    case BinaryOp::kSigmoidGrad:
    case BinaryOp::kTanhGrad:
    case BinaryOp::kGeluGrad:
    case BinaryOp::kSigmoidCrossEntropy:
      return kFloat<T>;
    case BinaryOp::kEqual:
    case BinaryOp::kNotEqual:
      return true;
    case BinaryOp::kLogicalAnd:
    case BinaryOp::kLogicalOr:
      return std::is_same_v<T, bool>;
  }
  return false;
}

template <BinaryOp kOp, typename T>
__device__ __forceinline__ auto Apply(T a, T b) {
  using W = Wrap<T>;
  if constexpr (kOp == BinaryOp::kAdd) {
    return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
  } else if constexpr (kOp == BinaryOp::kSub) {
    return static_cast<T>(static_cast<W>(a) - static_cast<W>(b));
  } else if constexpr (kOp == BinaryOp::kMul) {
    return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
  } else if constexpr (kOp == BinaryOp::kDiv) {
    return a / b;
  } else if constexpr (kOp == BinaryOp::kFloorDiv) {
    return Floor(a / b);
  } else if constexpr (kOp == BinaryOp::kMod) {
    // fmod moved to the divisor's sign (Python's %); x mod 0 is nan.
    T r = Fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else if constexpr (kOp == BinaryOp::kPow) {
    return Pow(a, b);
  } else if constexpr (kOp == BinaryOp::kMaximum) {
    return MaxNaN(a, b);
  } else if constexpr (kOp == BinaryOp::kMinimum) {
    return MinNaN(a, b);
  } else if constexpr (kOp == BinaryOp::kReluGrad) {
    return b > T(0) ? a : T(0);  // (dy, x)
  } else if constexpr (kOp == BinaryOp::kSigmoidGrad) {
    return b * a * (T(1) - a);  // (y, dy)
  } else if constexpr (kOp == BinaryOp::kTanhGrad) {
    return b * (T(1) - a * a);  // (y, dy)
  } else if constexpr (kOp == BinaryOp::kGeluGrad) {
    // (dy, x): dy * (Phi(x) + x * phi(x)).
    return a * (T(0.5) * (T(1) + Erf(b * T(0.7071067811865476))) +
                b * Exp(T(-0.5) * b * b) * T(0.3989422804014327));
  } else if constexpr (kOp == BinaryOp::kSigmoidCrossEntropy) {
    // max(x, 0) - x z + log(1 + exp(-|x|)): exp never overflows.
    return (a > T(0) ? a : T(0)) - a * b + Log1p(Exp(-Fabs(a)));
  } else if constexpr (kOp == BinaryOp::kEqual) {
    return a == b;
  } else if constexpr (kOp == BinaryOp::kNotEqual) {
    return a != b;
  } else if constexpr (kOp == BinaryOp::kLess) {
    return a < b;
  } else if constexpr (kOp == BinaryOp::kLessEqual) {
    return a <= b;
  } else if constexpr (kOp == BinaryOp::kGreater) {
    return a > b;
  } else if constexpr (kOp == BinaryOp::kGreaterEqual) {
    return a >= b;
  } else if constexpr (kOp == BinaryOp::kLogicalAnd) {
    return a && b;
  } else {
    static_assert(kOp == BinaryOp::kLogicalOr);
    return a || b;
  }
}

template <UnaryOp kOp, typename T>
constexpr bool Takes() {
  switch (kOp) {
    case UnaryOp::kAbs:
    case UnaryOp::kNeg:
    case UnaryOp::kSign:
    case UnaryOp::kSquare:
    case UnaryOp::kRelu:
    case UnaryOp::kIsNan:
    case UnaryOp::kIsFinite:
      return kNumber<T>;
    case UnaryOp::kLogicalNot:
      return std::is_same_v<T, bool>;
    default:
      return kFloat<T>;
  }
}

template <UnaryOp kOp, typename T>
__device__ __forceinline__ auto Apply(T x) {
  using W = Wrap<T>;
  if constexpr (kOp == UnaryOp::kAbs) {
    if constexpr (kFloat<T>) {
      return Fabs(x);
    } else if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else {
      return x < 0 ? static_cast<T>(W(0) - static_cast<W>(x)) : x;
    }
  } else if constexpr (kOp == UnaryOp::kNeg) {
    return static_cast<T>(W(0) - static_cast<W>(x));
  } else if constexpr (kOp == UnaryOp::kSign) {
    if constexpr (kFloat<T>) {
      if (x != x) return x;
    }
    if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(x > T(0));
    } else {
      return static_cast<T>((x > T(0)) - (x < T(0)));
    }
  } else if constexpr (kOp == UnaryOp::kSquare) {
    return static_cast<T>(static_cast<W>(x) * static_cast<W>(x));
  } else if constexpr (kOp == UnaryOp::kRelu) {
    return MaxNaN(x, T(0));
  } else if constexpr (kOp == UnaryOp::kFloor) {
    return Floor(x);
  } else if constexpr (kOp == UnaryOp::kCeil) {
    return Ceil(x);
  } else if constexpr (kOp == UnaryOp::kRound) {
    return Rint(x);  // half to even, as NumPy's round
  } else if constexpr (kOp == UnaryOp::kIsNan) {
    return x != x;
  } else if constexpr (kOp == UnaryOp::kIsFinite) {
    if constexpr (kFloat<T>) {
      return Fabs(x) <= (std::is_same_v<T, float> ? FLT_MAX : DBL_MAX);
    } else {
      return true;
    }
  } else if constexpr (kOp == UnaryOp::kSqrt) {
    return Sqrt(x);
  } else if constexpr (kOp == UnaryOp::kRsqrt) {
    return T(1) / Sqrt(x);
  } else if constexpr (kOp == UnaryOp::kExp) {
    return Exp(x);
  } else if constexpr (kOp == UnaryOp::kLog) {
    return Log(x);
  } else if constexpr (kOp == UnaryOp::kLog1p) {
    return Log1p(x);
  } else if constexpr (kOp == UnaryOp::kSin) {
    return Sin(x);
  } else if constexpr (kOp == UnaryOp::kCos) {
    return Cos(x);
  } else if constexpr (kOp == UnaryOp::kTanh) {
    return Tanh(x);
  } else if constexpr (kOp == UnaryOp::kSigmoid) {
    return T(1) / (T(1) + Exp(-x));
  } else if constexpr (kOp == UnaryOp::kElu) {
    return x > T(0) ? x : Expm1(x);
  } else if constexpr (kOp == UnaryOp::kSoftplus) {
    // max(x, 0) + log1p(exp(-|x|)): neither overflows nor loses precision.
    return MaxNaN(x, T(0)) + Log1p(Exp(-Fabs(x)));
  } else if constexpr (kOp == UnaryOp::kErf) {
    return Erf(x);
  } else if constexpr (kOp == UnaryOp::kGelu) {
    return T(0.5) * x * (T(1) + Erf(x * T(0.7071067811865476)));
  } else if constexpr (kOp == UnaryOp::kAsin) {
    return Asin(x);
  } else if constexpr (kOp == UnaryOp::kAcos) {
    return Acos(x);
  } else if constexpr (kOp == UnaryOp::kAtan) {
    return Atan(x);
  } else if constexpr (kOp == UnaryOp::kAsinh) {
    return Asinh(x);
  } else if constexpr (kOp == UnaryOp::kAcosh) {
    return Acosh(x);
  } else if constexpr (kOp == UnaryOp::kAtanh) {
    return Atanh(x);
  } else {
    static_assert(kOp == UnaryOp::kLogicalNot);
    return !x;
  }
}

template <BinaryOp kOp, typename T, typename Out>
__global__ void BinaryFlat(const T* a, const T* b, Out* out, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    out[i] = Narrow<Out>(Apply<kOp>(Widen(a[i]), Widen(b[i])));
  }
}

template <BinaryOp kOp, typename T, typename Out>
__global__ void BinaryBroadcast(const T* a, const T* b, Out* out, int64_t n,
                                Broadcast bc) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = bc.rank - 1; d >= 0; --d) {
      const int64_t k = rest % bc.dims[d];
      rest /= bc.dims[d];
      ia += k * bc.a_strides[d];
      ib += k * bc.b_strides[d];
    }
    out[i] = Narrow<Out>(Apply<kOp>(Widen(a[ia]), Widen(b[ib])));
  }
}

template <UnaryOp kOp, typename T, typename Out>
__global__ void UnaryFlat(const T* x, Out* out, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    out[i] = Narrow<Out>(Apply<kOp>(Widen(x[i])));
  }
}

template <BinaryOp kOp, typename T>
cudaError_t Binary(const void* a, const void* b, void* out, int64_t n,
                   const Broadcast* bc, cudaStream_t stream) {
  if constexpr (!Takes<kOp, T>()) {
    return cudaErrorNotSupported;
  } else {
    using Out = BinaryOut<kOp, T>;
    if (n == 0) return cudaSuccess;
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    Out* z = static_cast<Out*>(out);
    if (bc == nullptr) {
      BinaryFlat<kOp, T, Out><<<Blocks(n), kThreads, 0, stream>>>(x, y, z, n);
    } else {
      BinaryBroadcast<kOp, T, Out>
          <<<Blocks(n), kThreads, 0, stream>>>(x, y, z, n, *bc);
    }
    return cudaGetLastError();
  }
}

template <UnaryOp kOp, typename T>
cudaError_t Unary(const void* x, void* out, int64_t n, cudaStream_t stream) {
  if constexpr (!Takes<kOp, T>()) {
    return cudaErrorNotSupported;
  } else {
    using Out = UnaryOut<kOp, T>;
    if (n == 0) return cudaSuccess;
    UnaryFlat<kOp, T, Out><<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<Out*>(out), n);
    return cudaGetLastError();
  }
}

template <BinaryOp kOp>
cudaError_t BinaryOfType(ElemType type, const void* a, const void* b, void* out,
                         int64_t n, const Broadcast* bc, cudaStream_t stream) {
  return WithElemType(type, [&](auto zero) {
    return Binary<kOp, decltype(zero)>(a, b, out, n, bc, stream);
  });
}

template <UnaryOp kOp>
cudaError_t UnaryOfType(ElemType type, const void* x, void* out, int64_t n,
                        cudaStream_t stream) {
  return WithElemType(type, [&](auto zero) {
    return Unary<kOp, decltype(zero)>(x, out, n, stream);
  });
}

}  // namespace

cudaError_t LaunchBinary(BinaryOp op, ElemType type, const void* a,
                         const void* b, void* out, int64_t n,
                         const Broadcast* bc, cudaStream_t stream) {
#define RN_CASE(Op)  \
  case BinaryOp::Op: \
    return BinaryOfType<BinaryOp::Op>(type, a, b, out, n, bc, stream);
  switch (op) {
    RN_CASE(kAdd)
    RN_CASE(kSub)
    RN_CASE(kMul)
    RN_CASE(kDiv)
    RN_CASE(kFloorDiv)
    RN_CASE(kMod)
    RN_CASE(kPow)
    RN_CASE(kMaximum)
    RN_CASE(kMinimum)
    RN_CASE(kReluGrad)
    RN_CASE(kSigmoidGrad)
    RN_CASE(kTanhGrad)
    RN_CASE(kGeluGrad)
    RN_CASE(kSigmoidCrossEntropy)
    RN_CASE(kEqual)
    RN_CASE(kNotEqual)
    RN_CASE(kLess)
    RN_CASE(kLessEqual)
    RN_CASE(kGreater)
    RN_CASE(kGreaterEqual)
    RN_CASE(kLogicalAnd)
    RN_CASE(kLogicalOr)
  }
#undef RN_CASE
  return cudaErrorNotSupported;
}

cudaError_t LaunchUnary(UnaryOp op, ElemType type, const void* x, void* out,
                        int64_t n, cudaStream_t stream) {
#define RN_CASE(Op) \
  case UnaryOp::Op: \
    return UnaryOfType<UnaryOp::Op>(type, x, out, n, stream);
  switch (op) {
    RN_CASE(kAbs)
    RN_CASE(kNeg)
    RN_CASE(kSign)
    RN_CASE(kSquare)
    RN_CASE(kRelu)
    RN_CASE(kFloor)
    RN_CASE(kCeil)
    RN_CASE(kRound)
    RN_CASE(kIsNan)
    RN_CASE(kIsFinite)
    RN_CASE(kSqrt)
    RN_CASE(kRsqrt)
    RN_CASE(kExp)
    RN_CASE(kLog)
    RN_CASE(kLog1p)
    RN_CASE(kSin)
    RN_CASE(kCos)
    RN_CASE(kTanh)
    RN_CASE(kSigmoid)
    RN_CASE(kElu)
    RN_CASE(kSoftplus)
    RN_CASE(kErf)
    RN_CASE(kGelu)
    RN_CASE(kAsin)
    RN_CASE(kAcos)
    RN_CASE(kAtan)
    RN_CASE(kAsinh)
    RN_CASE(kAcosh)
    RN_CASE(kAtanh)
    RN_CASE(kLogicalNot)
  }
#undef RN_CASE
  return cudaErrorNotSupported;
}

}  // namespace runnel::cuda
