// Kernels of the comparisons (bool results), the binary logical ops, and the
// three-operand selections `where` and `clip`, all with NumPy broadcasting
// (framework/ops/math_ops.cc).
#include <type_traits>

#include "framework/kernel.h"
#include "kernels/cpu/broadcast.h"

namespace runnel {
namespace {

struct Equal {
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x == y;
  }
};
struct NotEqual {
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x != y;
  }
};
struct Less {
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x < y;
  }
};
struct LessEqual {
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x <= y;
  }
};
struct Greater {
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x > y;
  }
};
struct GreaterEqual {
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x >= y;
  }
};
struct LogicalAnd {
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x && y;
  }
};
struct LogicalOr {
  template <class X, class Y>
  static auto Eval(const X& x, const Y& y) {
    return x || y;
  }
};

// z = F(x, y) with bool z; 16-bit floats compare as float (exactly).
template <typename T, typename F>
class CompareKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    auto eval = [](const auto& u, const auto& v) { return F::Eval(u, v); };
    if (x.rank() == 0 && y.rank() == 0) {  // a loop's condition: no layout
      RN_ASSIGN_OR_RETURN(Tensor * z, ctx->allocate_output(0, Shape{}));
      EvalRow<AccumType<T>, 2, T>({x.data<T>(), y.data<T>()}, {1, 1},
                                  z->data<bool>(), 1, eval);
      return absl::OkStatus();
    }
    RN_ASSIGN_OR_RETURN(StridedLayout<2> l,
                        MakeBroadcastLayout<2>({&x.shape(), &y.shape()}));
    RN_ASSIGN_OR_RETURN(Tensor * z, ctx->allocate_output(0, l.shape));
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    bool* out = z->data<bool>();
    ParallelForEachRow<2>(ctx->intra_op_pool(), l, /*cost=*/1,
                          [&](int64_t o, int64_t n, const Offsets<2>& in,
                              const Offsets<2>& stride) {
                            EvalRow<AccumType<T>, 2, T>({a + in[0], b + in[1]},
                                                        stride, out + o, n,
                                                        eval);
                          });
    return absl::OkStatus();
  }
};

// where(cond, a, b): copies, so 16-bit floats stay in storage form.
template <typename T>
class WhereKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& c = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Tensor& y = ctx->input(2);
    RN_ASSIGN_OR_RETURN(
        StridedLayout<3> l,
        MakeBroadcastLayout<3>({&c.shape(), &x.shape(), &y.shape()}));
    RN_ASSIGN_OR_RETURN(Tensor * z, ctx->allocate_output(0, l.shape));
    const bool* pc = c.data<bool>();
    const T* pa = x.data<T>();
    const T* pb = y.data<T>();
    T* out = z->data<T>();
    using S = EigenType<T>;
    ParallelForEachRow<3>(
        ctx->intra_op_pool(), l, /*cost=*/1,
        [&](int64_t o, int64_t n, const Offsets<3>& in,
            const Offsets<3>& stride) {
          auto dst = OutArray(out + o, n);
          WithOperand<bool>(pc + in[0], stride[0], n, [&](const auto& cc) {
            WithOperand<S>(pa + in[1], stride[1], n, [&](const auto& u) {
              WithOperand<S>(pb + in[2], stride[2], n,
                             [&](const auto& v) { dst = cc.select(u, v); });
            });
          });
        });
    return absl::OkStatus();
  }
};

template <typename C>
using MaxNaN = Eigen::internal::scalar_max_op<C, C, Eigen::PropagateNaN>;
template <typename C>
using MinNaN = Eigen::internal::scalar_min_op<C, C, Eigen::PropagateNaN>;

// clip(x, lo, hi) = min(max(x, lo), hi); nan in x stays nan.
template <typename T>
class ClipKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& lo = ctx->input(1);
    const Tensor& hi = ctx->input(2);
    RN_ASSIGN_OR_RETURN(
        StridedLayout<3> l,
        MakeBroadcastLayout<3>({&x.shape(), &lo.shape(), &hi.shape()}));
    RN_ASSIGN_OR_RETURN(Tensor * z, ctx->allocate_output(0, l.shape));
    const T* px = x.data<T>();
    const T* plo = lo.data<T>();
    const T* phi = hi.data<T>();
    T* out = z->data<T>();
    using C = AccumType<T>;
    ParallelForEachRow<3>(
        ctx->intra_op_pool(), l, /*cost=*/2,
        [&](int64_t o, int64_t n, const Offsets<3>& in,
            const Offsets<3>& stride) {
          EvalRow<C, 3, T>(
              {px + in[0], plo + in[1], phi + in[2]}, stride, out + o, n,
              [](const auto& v, const auto& a, const auto& b) {
                return v.binaryExpr(a, MaxNaN<C>()).binaryExpr(b, MinNaN<C>());
              });
        });
    return absl::OkStatus();
  }
};

template <typename F, typename... Ts>
void RegisterCompare(const std::string& op, TypeList<Ts...>) {
  (RegisterKernel<CompareKernel<Ts, F>>(op, kDeviceCpu, DTypeOf<Ts>::value),
   ...);
}

RUNNEL_STATIC_INIT(CwiseCompareKernels) {
  RegisterCompare<Equal>("equal", AllTypes{});
  RegisterCompare<NotEqual>("not_equal", AllTypes{});
  RegisterCompare<Less>("less", NumericTypes{});
  RegisterCompare<LessEqual>("less_equal", NumericTypes{});
  RegisterCompare<Greater>("greater", NumericTypes{});
  RegisterCompare<GreaterEqual>("greater_equal", NumericTypes{});
  RegisterCompare<LogicalAnd>("logical_and", TypeList<bool>{});
  RegisterCompare<LogicalOr>("logical_or", TypeList<bool>{});
  RegisterKernelForTypeList<WhereKernel>("where", AllTypes{});
  RegisterKernelForTypeList<ClipKernel>("clip", NumericTypes{});
}

}  // namespace
}  // namespace runnel
