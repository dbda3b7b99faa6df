// Kernels of the binary arithmetic ops with NumPy broadcasting
// (framework/ops/math_ops.cc): add sub mul div floordiv mod pow maximum
// minimum.
//
// Each functor maps two Eigen array expressions (of its compute type) to the
// result expression. The kernel walks the broadcast output in rows
// (broadcast.h); in a row each operand is either contiguous or one repeated
// value, so every row is a vectorised Eigen assignment.
#include <cmath>
#include <limits>
#include <type_traits>

#include "base/strings.h"
#include "framework/kernel.h"
#include "kernels/cpu/broadcast.h"

namespace runnel {
namespace {

template <typename T>
inline constexpr bool kIsInt = std::is_integral_v<T>;

// Most ops compute in AccumType<T> and give T.
struct SameTypeOp {
  template <typename T>
  using Compute = AccumType<T>;
  template <typename T>
  using Out = T;
  static constexpr bool kIntDivides = false;
};

// add, sub and mul compute signed integers as their unsigned twins, so an
// overflow wraps around in two's complement (as in NumPy, TensorFlow and
// PyTorch; docs/language.md) instead of being undefined behaviour.
template <typename T, bool = kIsInt<T>&& std::is_signed_v<T>>
struct WrappingType {
  using type = AccumType<T>;
};
template <typename T>
struct WrappingType<T, true> {
  using type = std::make_unsigned_t<T>;
};
struct WrappingOp : SameTypeOp {
  template <typename T>
  using Compute = typename WrappingType<T>::type;
};

struct Add : WrappingOp {
  static constexpr int kCost = 1;
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x + y;
  }
};
struct Sub : WrappingOp {
  static constexpr int kCost = 1;
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x - y;
  }
};
struct Mul : WrappingOp {
  static constexpr int kCost = 1;
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x * y;
  }
};

// True division. Integers divide in double and give f32 (f64 for i64).
struct Div {
  template <typename T>
  using Compute = std::conditional_t<kIsInt<T>, double, AccumType<T>>;
  template <typename T>
  using Out = std::conditional_t<
      kIsInt<T>, std::conditional_t<std::is_same_v<T, int64_t>, double, float>,
      T>;
  static constexpr bool kIntDivides = true;
  static constexpr int kCost = 4;
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x / y;
  }
};

// Integer quotient and remainder rounded toward negative infinity (Python's
// // and %). The divisor is never 0 (checked first); -1 is special-cased
// because INT_MIN / -1 traps on x86.
template <typename S>
struct IntFloorDivOp {
  S operator()(S x, S y) const {
    if constexpr (std::is_signed_v<S>) {
      if (y == -1)
        return static_cast<S>(0 - static_cast<std::make_unsigned_t<S>>(x));
      S q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
      return q;
    } else {
      return x / y;
    }
  }
};
template <typename S>
struct IntModOp {
  S operator()(S x, S y) const {
    if constexpr (std::is_signed_v<S>) {
      if (y == -1) return 0;
      S r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    } else {
      return x % y;
    }
  }
};
// fmod, moved to the divisor's sign; x mod 0 is nan.
template <typename S>
struct FloatModOp {
  S operator()(S x, S y) const {
    S r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
  }
};
// Exponentiation by squaring; the exponent is never negative (checked
// first). Wraps on overflow like the other integer ops.
template <typename S>
struct IntPowOp {
  S operator()(S x, S y) const {
    using U = std::make_unsigned_t<
        std::conditional_t<(sizeof(S) < sizeof(int)), int, S>>;
    U base = static_cast<U>(x), result = 1;
    for (auto e = y; e > 0; e >>= 1) {
      if (e & 1) result *= base;
      base *= base;
    }
    return static_cast<S>(result);
  }
};

struct FloorDiv : SameTypeOp {
  static constexpr bool kIntDivides = true;
  static constexpr int kCost = 6;
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    using S = typename X::Scalar;
    if constexpr (kIsInt<S>) {
      return x.binaryExpr(y, IntFloorDivOp<S>());
    } else {
      return (x / y).floor();
    }
  }
};
struct Mod : SameTypeOp {
  static constexpr bool kIntDivides = true;
  static constexpr int kCost = 10;
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    using S = typename X::Scalar;
    if constexpr (kIsInt<S>) {
      return x.binaryExpr(y, IntModOp<S>());
    } else {
      return x.binaryExpr(y, FloatModOp<S>());
    }
  }
};
struct Pow : SameTypeOp {
  static constexpr int kCost = 20;
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    using S = typename X::Scalar;
    if constexpr (kIsInt<S>) {
      return x.binaryExpr(y, IntPowOp<S>());
    } else {
      return x.pow(y);
    }
  }
};
struct Maximum : SameTypeOp {
  static constexpr int kCost = 1;
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    using S = typename X::Scalar;
    return x.binaryExpr(
        y, Eigen::internal::scalar_max_op<S, S, Eigen::PropagateNaN>());
  }
};
struct Minimum : SameTypeOp {
  static constexpr int kCost = 1;
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    using S = typename X::Scalar;
    return x.binaryExpr(
        y, Eigen::internal::scalar_min_op<S, S, Eigen::PropagateNaN>());
  }
};

// User errors that would otherwise trap or be undefined: an integer divisor
// of zero, an integer raised to a negative power.
template <typename T, typename F>
absl::Status CheckOperands(const Node& node, const Tensor& y,
                           int64_t out_elements) {
  if constexpr (kIsInt<T>) {
    if (out_elements == 0) return absl::OkStatus();
    auto v = InArray(y.data<T>(), y.num_elements());
    if constexpr (F::kIntDivides) {
      if ((v == T(0)).any()) {
        return absl::InvalidArgumentError(
            StrCat(node.op(), ": integer division by zero"));
      }
    }
    if constexpr (std::is_same_v<F, Pow> && std::is_signed_v<T>) {
      if ((v < T(0)).any()) {
        return absl::InvalidArgumentError(
            StrCat(node.op(),
                   ": integers to negative integer powers are not allowed"));
      }
    }
  }
  return absl::OkStatus();
}

template <typename T, typename F>
class BinaryKernel : public OpKernel {
 public:
  using C = EigenType<typename F::template Compute<T>>;
  using Out = typename F::template Out<T>;

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    // Two scalars (a loop's counters): no layout to build or walk.
    const bool scalars = x.rank() == 0 && y.rank() == 0;
    StridedLayout<2> l;
    if (scalars) {
      l.num_elements = 1;
    } else {
      RN_ASSIGN_OR_RETURN(l, MakeBroadcastLayout<2>({&x.shape(), &y.shape()}));
    }
    RN_RETURN_IF_ERROR((CheckOperands<T, F>(ctx->node(), y, l.num_elements)));
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    // In an operand's buffer when it has the result's shape and dtype and
    // nobody else holds it: each element is read before it is written.
    Tensor* z = ctx->forward_input(0, 0, l.shape);
    if (z == nullptr) z = ctx->forward_input(1, 0, l.shape);
    if (z == nullptr) {
      RN_ASSIGN_OR_RETURN(z, ctx->allocate_output(0, l.shape));
    }
    Out* out = z->data<Out>();
    auto eval = [](const auto& u, const auto& v) { return F::Eval(u, v); };
    if (scalars) {
      EvalRow<C, 2, T>({a, b}, {1, 1}, out, 1, eval);
      return absl::OkStatus();
    }
    ParallelForEachRow<2>(
        ctx->intra_op_pool(), l, F::kCost,
        [&](int64_t o, int64_t n, const Offsets<2>& in,
            const Offsets<2>& stride) {
          EvalRow<C, 2, T>({a + in[0], b + in[1]}, stride, out + o, n, eval);
        });
    return absl::OkStatus();
  }
};

template <typename F, typename... Ts>
void RegisterBinary(const std::string& op, TypeList<Ts...>) {
  (RegisterKernel<BinaryKernel<Ts, F>>(op, kDeviceCpu, DTypeOf<Ts>::value),
   ...);
}

RUNNEL_STATIC_INIT(CwiseBinaryKernels) {
  RegisterBinary<Add>("add", NumericTypes{});
  RegisterBinary<Sub>("sub", NumericTypes{});
  RegisterBinary<Mul>("mul", NumericTypes{});
  RegisterBinary<Div>("div", NumericTypes{});
  RegisterBinary<FloorDiv>("floordiv", NumericTypes{});
  RegisterBinary<Mod>("mod", NumericTypes{});
  RegisterBinary<Pow>("pow", NumericTypes{});
  RegisterBinary<Maximum>("maximum", NumericTypes{});
  RegisterBinary<Minimum>("minimum", NumericTypes{});
}

}  // namespace
}  // namespace runnel
