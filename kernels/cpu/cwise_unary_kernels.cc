// Kernels of the unary element-wise ops (framework/ops/math_ops.cc).
//
// Each functor maps an Eigen array expression to the result expression; the
// kernel evaluates it over shards of the input in parallel. 16-bit floats are
// computed in float and rounded once.
#include <cmath>
#include <limits>
#include <unsupported/Eigen/SpecialFunctions>

#include "framework/kernel.h"
#include "kernels/cpu/broadcast.h"

namespace runnel {
namespace {

template <typename T>
inline constexpr bool kIsFloat = !std::is_integral_v<T>;

// max(x, y) that returns nan when either is nan (NumPy's maximum).
template <typename X, typename Y>
auto MaxNaN(const X& x, const Y& y) {
  using S = typename X::Scalar;
  return x.binaryExpr(
      y, Eigen::internal::scalar_max_op<S, S, Eigen::PropagateNaN>());
}

struct Abs {
  static constexpr int kCost = 1;
  template <class X>
  static auto Eval(const X& x) {
    return x.abs();
  }
};
struct Neg {
  static constexpr int kCost = 1;
  template <class X>
  static auto Eval(const X& x) {
    return -x;
  }
};
struct Sign {
  static constexpr int kCost = 2;
  template <class X>
  static auto Eval(const X& x) {
    return x.sign();
  }
};
struct Square {
  static constexpr int kCost = 1;
  template <class X>
  static auto Eval(const X& x) {
    return x.square();
  }
};
struct Relu {
  static constexpr int kCost = 1;
  template <class X>
  static auto Eval(const X& x) {
    using S = typename X::Scalar;
    return MaxNaN(x, EigenArray<S>::Zero(x.size()));
  }
};
struct Floor {
  static constexpr int kCost = 1;
  template <class X>
  static auto Eval(const X& x) {
    return x.floor();
  }
};
struct Ceil {
  static constexpr int kCost = 1;
  template <class X>
  static auto Eval(const X& x) {
    return x.ceil();
  }
};
// rint rounds half to even in the default rounding mode, like NumPy's round.
struct Round {
  static constexpr int kCost = 1;
  template <class X>
  static auto Eval(const X& x) {
    return x.rint();
  }
};
struct IsNan {
  static constexpr int kCost = 1;
  template <class X>
  static auto Eval(const X& x) {
    return x != x;
  }
};
struct IsFinite {
  static constexpr int kCost = 1;
  template <class X>
  static auto Eval(const X& x) {
    if constexpr (kIsFloat<typename X::Scalar>) {
      return x.isFinite();
    } else {
      return x == x;
    }
  }
};
struct Sqrt {
  static constexpr int kCost = 4;
  template <class X>
  static auto Eval(const X& x) {
    return x.sqrt();
  }
};
struct Rsqrt {
  static constexpr int kCost = 5;
  template <class X>
  static auto Eval(const X& x) {
    return x.rsqrt();
  }
};
struct Exp {
  static constexpr int kCost = 10;
  template <class X>
  static auto Eval(const X& x) {
    return x.exp();
  }
  // Eigen 3.4's vectorized exp clamps its argument below (about -88.38 for
  // f32, -709.44 for f64) and so gives the smallest normal number where
  // the result underflows (exp(-100) = 2.9e-39 in f32), while its scalar
  // tail gives the right value: those elements are computed again by the
  // C library, which underflows to the subnormal or 0 IEEE 754 asks for.
  template <class T>
  static void Fix(const T* x, T* y, int64_t n) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T low = std::is_same_v<T, float> ? T(-88.0) : T(-708.0);
      // A vectorized minimum first (NaNs ignored): most chunks have no such
      // element, and the loop below, which calls the C library, is scalar.
      if (n == 0 ||
          Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(x, n)
                  .template minCoeff<Eigen::PropagateNumbers>() >= low) {
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        if (x[i] < low) y[i] = std::exp(x[i]);
      }
    }
  }
};
struct Log {
  static constexpr int kCost = 10;
  template <class X>
  static auto Eval(const X& x) {
    return x.log();
  }
};
struct Log1p {
  static constexpr int kCost = 12;
  template <class X>
  static auto Eval(const X& x) {
    return x.log1p();
  }
};
struct Sin {
  static constexpr int kCost = 10;
  template <class X>
  static auto Eval(const X& x) {
    return x.sin();
  }
};
struct Cos {
  static constexpr int kCost = 10;
  template <class X>
  static auto Eval(const X& x) {
    return x.cos();
  }
};
struct Tanh {
  static constexpr int kCost = 12;
  template <class X>
  static auto Eval(const X& x) {
    return x.tanh();
  }
};
// 1 / (1 + exp(-x)), as the GPU's kernel, PyTorch and NumPy compute it:
// Eigen's logistic() (a rational approximation) rounds sigmoid(16) up to
// 1.0 where it is 1 - 2^-23 in f32, so that 1 - sigmoid(x), a GRU's update
// share, became 0 for x >= 15.9 (ONNX's test_gru_seq_length).
struct Sigmoid {
  static constexpr int kCost = 14;
  template <class X>
  static auto Eval(const X& x) {
    return SigmoidOf(x);
  }
};
struct Elu {
  static constexpr int kCost = 12;
  template <class X>
  static auto Eval(const X& x) {
    using S = typename X::Scalar;
    return (x > S(0)).select(x, x.expm1());
  }
};
// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), which neither overflows
// for large x nor loses precision for very negative x.
struct Softplus {
  static constexpr int kCost = 25;
  template <class X>
  static auto Eval(const X& x) {
    using S = typename X::Scalar;
    return MaxNaN(x, EigenArray<S>::Zero(x.size())) + (-x.abs()).exp().log1p();
  }
};
// Eigen's erf: a rational approximation, vectorized for float.
struct Erf {
  static constexpr int kCost = 20;
  template <class X>
  static auto Eval(const X& x) {
    return x.erf();
  }
};
// x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2))), with Eigen's erf.
struct Gelu {
  static constexpr int kCost = 24;
  template <class X>
  static auto Eval(const X& x) {
    using S = typename X::Scalar;
    return S(0.5) * x * (S(1) + (x * S(0.7071067811865476)).erf());
  }
};
// A function of the C library, element by element: the inverse
// trigonometric and hyperbolic functions (Eigen vectorizes only some of
// them, and not for every dtype).
template <auto kFn>
struct ByElement {
  static constexpr int kCost = 30;
  template <class X>
  static auto Eval(const X& x) {
    using S = typename X::Scalar;
    return x.unaryExpr([](S v) -> S { return kFn(v); });
  }
};
struct LogicalNot {
  static constexpr int kCost = 1;
  template <class X>
  static auto Eval(const X& x) {
    return !x;
  }
};

// y = F(x) for T inputs and Out outputs; y in x's buffer when nothing
// else holds it (relu after a bias_add, whose gradient reads relu's
// output), except for the F that fix up y from x afterwards.
template <typename T, typename F, typename Out = T>
class UnaryKernel : public OpKernel {
  // Whether F fixes y up from x after the vectorised pass (exp).
  static constexpr bool kFixes = requires(const T* in, Out* out) {
    F::Fix(in, out, int64_t{0});
  };

 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* y = nullptr;
    if constexpr (std::is_same_v<Out, T> && !kFixes) {
      y = ctx->forward_input(0, 0, x.shape());
    }
    if (y == nullptr) {
      RN_ASSIGN_OR_RETURN(y, ctx->allocate_output(0, x.shape()));
    }
    const T* in = x.data<T>();
    Out* out = y->data<Out>();
    ctx->intra_op_pool()->ParallelFor(
        x.num_elements(), F::kCost, [&](int64_t begin, int64_t end) {
          EvalRow<AccumType<T>, 1, T>({in + begin}, {1}, out + begin,
                                      end - begin,
                                      [](const auto& x) { return F::Eval(x); });
          if constexpr (kFixes) {
            F::Fix(in + begin, out + begin, end - begin);
          }
        });
    return absl::OkStatus();
  }
};

// floor, ceil, round of an integer tensor: the input itself.
class ForwardKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    return ctx->set_output(0, ctx->input(0));
  }
  bool IsExpensive() const override { return false; }
};

template <typename F, typename Out, typename... Ts>
void RegisterUnary(const std::string& op, TypeList<Ts...>) {
  if constexpr (std::is_void_v<Out>) {
    (RegisterKernel<UnaryKernel<Ts, F>>(op, kDeviceCpu, DTypeOf<Ts>::value),
     ...);
  } else {
    (RegisterKernel<UnaryKernel<Ts, F, Out>>(op, kDeviceCpu,
                                             DTypeOf<Ts>::value),
     ...);
  }
}

using IntTypes = TypeList<int8_t, uint8_t, int32_t, int64_t>;
using SignedIntTypes = TypeList<int8_t, int32_t, int64_t>;

RUNNEL_STATIC_INIT(CwiseUnaryKernels) {
  RegisterUnary<Abs, void>("abs", FloatTypes{});
  RegisterUnary<Abs, void>("abs", SignedIntTypes{});
  RegisterKernel<ForwardKernel>("abs", kDeviceCpu, DType::kU8);
  RegisterUnary<Neg, void>("neg", NumericTypes{});
  RegisterUnary<Sign, void>("sign", NumericTypes{});
  RegisterUnary<Square, void>("square", NumericTypes{});
  RegisterUnary<Relu, void>("relu", NumericTypes{});
  for (const char* op : {"floor", "ceil", "round"}) {
    for (DType d : {DType::kI8, DType::kU8, DType::kI32, DType::kI64}) {
      RegisterKernel<ForwardKernel>(op, kDeviceCpu, d);
    }
  }
  RegisterUnary<Floor, void>("floor", FloatTypes{});
  RegisterUnary<Ceil, void>("ceil", FloatTypes{});
  RegisterUnary<Round, void>("round", FloatTypes{});
  RegisterUnary<IsNan, bool>("isnan", NumericTypes{});
  RegisterUnary<IsFinite, bool>("isfinite", NumericTypes{});

  RegisterUnary<Sqrt, void>("sqrt", FloatTypes{});
  RegisterUnary<Rsqrt, void>("rsqrt", FloatTypes{});
  RegisterUnary<Exp, void>("exp", FloatTypes{});
  RegisterUnary<Log, void>("log", FloatTypes{});
  RegisterUnary<Log1p, void>("log1p", FloatTypes{});
  RegisterUnary<Sin, void>("sin", FloatTypes{});
  RegisterUnary<Cos, void>("cos", FloatTypes{});
  RegisterUnary<Tanh, void>("tanh", FloatTypes{});
  RegisterUnary<Sigmoid, void>("sigmoid", FloatTypes{});
  RegisterUnary<Elu, void>("elu", FloatTypes{});
  RegisterUnary<Softplus, void>("softplus", FloatTypes{});
  RegisterUnary<Erf, void>("erf", FloatTypes{});
  RegisterUnary<Gelu, void>("gelu", FloatTypes{});
  RegisterUnary<ByElement<[](auto v) { return std::asin(v); }>, void>(
      "asin", FloatTypes{});
  RegisterUnary<ByElement<[](auto v) { return std::acos(v); }>, void>(
      "acos", FloatTypes{});
  RegisterUnary<ByElement<[](auto v) { return std::atan(v); }>, void>(
      "atan", FloatTypes{});
  RegisterUnary<ByElement<[](auto v) { return std::asinh(v); }>, void>(
      "asinh", FloatTypes{});
  RegisterUnary<ByElement<[](auto v) { return std::acosh(v); }>, void>(
      "acosh", FloatTypes{});
  RegisterUnary<ByElement<[](auto v) { return std::atanh(v); }>, void>(
      "atanh", FloatTypes{});

  RegisterUnary<LogicalNot, void>("logical_not", TypeList<bool>{});
}

}  // namespace
}  // namespace runnel
