// Kernels of the gradient ops (framework/ops/grad_ops.cc).
//
// The activation gradients are element-wise rows evaluated like the other
// element-wise kernels (broadcast.h). sum_to_like and tile_grad sum with
// the `sum` kernel's reduction (reduction.h), whose work is cut by shape
// only, so the result does not depend on the number of threads. The scattering
// adjoints (slice, strided_slice, dynamic_index, pad) move bytes and serve
// every dtype.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <unsupported/Eigen/SpecialFunctions>
#include <vector>

#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/ops/array_ops.h"
#include "framework/ops/kernel_checks.h"
#include "framework/shape_fns.h"
#include "kernels/common/array_util.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/reduction.h"

namespace runnel {
namespace {

// ---- activation gradients --------------------------------------------------

struct ReluGrad {
  static constexpr int kCost = 1;
  template <class Dy, class X>
  static auto Eval(const Dy& dy, const X& x) {
    using S = typename Dy::Scalar;
    return (x > S(0)).select(dy, S(0));
  }
};
struct SigmoidGrad {
  static constexpr int kCost = 3;
  template <class Y, class Dy>
  static auto Eval(const Y& y, const Dy& dy) {
    using S = typename Y::Scalar;
    return dy * y * (S(1) - y);
  }
};
struct TanhGrad {
  static constexpr int kCost = 3;
  template <class Y, class Dy>
  static auto Eval(const Y& y, const Dy& dy) {
    using S = typename Y::Scalar;
    return dy * (S(1) - y * y);
  }
};

// gelu_grad(dy, x) = dy * (Phi(x) + x * phi(x)).
struct GeluGrad {
  static constexpr int kCost = 30;
  template <class Dy, class X>
  static auto Eval(const Dy& dy, const X& x) {
    using S = typename Dy::Scalar;
    return dy * (S(0.5) * (S(1) + (x * S(0.7071067811865476)).erf()) +
                 x * (x * x * S(-0.5)).exp() * S(0.3989422804014327));
  }
};

// out = F(input 0, input 1), both of one shape.
template <typename T, typename F>
class BinaryGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    RN_RETURN_IF_ERROR(CheckSameShapes(ctx->node().op(), a, b));
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, a.shape()));
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out->data<T>();
    ctx->intra_op_pool()->ParallelFor(
        a.num_elements(), F::kCost, [&](int64_t begin, int64_t end) {
          EvalRow<AccumType<T>, 2, T>(
              {pa + begin, pb + begin}, {1, 1}, po + begin, end - begin,
              [](const auto& x, const auto& y) { return F::Eval(x, y); });
        });
    return absl::OkStatus();
  }
};

template <typename T>
using ReluGradKernel = BinaryGradKernel<T, ReluGrad>;
template <typename T>
using SigmoidGradKernel = BinaryGradKernel<T, SigmoidGrad>;
template <typename T>
using TanhGradKernel = BinaryGradKernel<T, TanhGrad>;
template <typename T>
using GeluGradKernel = BinaryGradKernel<T, GeluGrad>;

// sum_to_like(dy, x): dy summed to x's shape.
template <typename T>
class SumToLikeKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    if (shape.num_elements() == dy.num_elements()) {
      // Only axes of size 1 differ: the same elements in the same order.
      RN_ASSIGN_OR_RETURN(Tensor view, dy.Reshaped(shape));
      return ctx->set_output(0, std::move(view));
    }
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    return SumOverAxes<T>(ctx, dy, SumToLikeAxes(dy.shape(), shape), out);
  }
};

// ---- scattering adjoints ---------------------------------------------------

// Output columns one task of gather_grad accumulates, at most.
constexpr int64_t kScatterColumns = 1024;

// The shape of gather_grad's and gather_grad_add's work: params (or x) as
// [outer, n, inner] along the axis, dy as [outer, m, inner], m = the
// indices' count, the indices checked to lie in [0, n).
struct ScatterPlan {
  int64_t outer = 1, n = 0, inner = 1;
  std::vector<int64_t> idx;
};
absl::StatusOr<ScatterPlan> PlanScatter(OpKernelContext* ctx,
                                        const Tensor& params) {
  RN_ASSIGN_OR_RETURN(int64_t axis, ctx->node().attr<int64_t>("axis"));
  RN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, params.rank()));
  ScatterPlan p;
  for (int k = 0; k < a; ++k) p.outer *= params.dim(k);
  for (int k = a + 1; k < params.rank(); ++k) p.inner *= params.dim(k);
  p.n = params.dim(a);
  p.idx = ctx->input(1).ToInt64s();
  RN_RETURN_IF_ERROR(CheckGatherIndices(p.idx, p.n, a, params.shape(),
                                        StrCat(ctx->node().op(), ": ")));
  return p;
}

// Adds dy's slices into `acc` at the plan's indices. A task owns a block
// of columns of one outer index and adds the slices in index order, so
// repeated indices sum in a fixed order.
template <typename A, typename T>
void AddSlices(OpKernelContext* ctx, const ScatterPlan& p, const T* g, A* acc) {
  const int64_t m = static_cast<int64_t>(p.idx.size());
  const int64_t inner = p.inner;
  const int64_t width = std::min(std::max<int64_t>(inner, 1), kScatterColumns);
  const int64_t blocks = (inner + width - 1) / width;
  ctx->intra_op_pool()->ParallelFor(
      p.outer * blocks, m * width, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t o = t / blocks, c0 = t % blocks * width;
          const int64_t w = std::min(width, inner - c0);
          for (int64_t j = 0; j < m; ++j) {
            OutArray(acc + (o * p.n + p.idx[j]) * inner + c0, w) +=
                Load<A>(g + (o * m + j) * inner + c0, w);
          }
        }
      });
}

// gather_grad(params, indices, dy): dy's slices added into zeros of
// params' shape.
template <typename T>
class GatherGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    RN_ASSIGN_OR_RETURN(const ScatterPlan p, PlanScatter(ctx, params));
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    if (out->num_elements() == 0) return absl::OkStatus();
    using A = AccumType<T>;
    // 16-bit floats add up in f32 and are rounded once.
    Tensor acc_buffer;
    A* acc;
    if constexpr (std::is_same_v<A, EigenType<T>>) {
      acc = reinterpret_cast<A*>(out->data<T>());
    } else {
      acc_buffer = Tensor(DType::kF32, shape);
      acc = acc_buffer.data<float>();
    }
    std::fill_n(acc, out->num_elements(), A(0));
    AddSlices(ctx, p, ctx->input(2).data<T>(), acc);
    if constexpr (!std::is_same_v<A, EigenType<T>>) {
      NarrowFromFloat(acc, out->data<T>(), out->num_elements());
    }
    return absl::OkStatus();
  }
};

// gather_grad_add(x, indices, dy): x with dy's slices added, in x's own
// buffer when nothing else holds it (f32 and f64).
template <typename T>
class GatherGradAddKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    RN_ASSIGN_OR_RETURN(const ScatterPlan p, PlanScatter(ctx, x));
    bool forwarded = false;
    RN_ASSIGN_OR_RETURN(Tensor * y, ctx->forward_input_or_allocate(
                                        0, 0, x.shape(), &forwarded));
    if (!forwarded && x.num_elements() > 0) {
      std::memcpy(y->raw_data(), x.raw_data(), x.bytes());
    }
    if (y->num_elements() == 0) return absl::OkStatus();
    AddSlices(ctx, p, ctx->input(2).data<T>(), y->data<T>());
    return absl::OkStatus();
  }
};

// tile_grad(dy, x): dy viewed as [m0, d0, m1, d1, ...], summed over the m.
template <typename T>
class TileGradKernel : public OpKernel {
 public:
  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    RN_ASSIGN_OR_RETURN(Shape shape, ConcreteOutputShape(*ctx));
    if (shape == dy.shape()) return ctx->set_output(0, dy);
    RN_ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    if (out->num_elements() == 0) return absl::OkStatus();
    std::vector<int64_t> dims;
    std::vector<int> axes;
    for (int k = 0; k < shape.rank(); ++k) {
      axes.push_back(2 * k);
      dims.insert(dims.end(), {dy.dim(k) / shape.dim(k), shape.dim(k)});
    }
    RN_ASSIGN_OR_RETURN(Tensor tiles, dy.Reshaped(Shape(std::move(dims))));
    return SumOverAxes<T>(ctx, tiles, axes, out);
  }
};

RUNNEL_STATIC_INIT(GradKernels) {
  RegisterKernelForTypeList<ReluGradKernel>("relu_grad", NumericTypes{});
  RegisterKernelForTypeList<SigmoidGradKernel>("sigmoid_grad", FloatTypes{});
  RegisterKernelForTypeList<TanhGradKernel>("tanh_grad", FloatTypes{});
  RegisterKernelForTypeList<GeluGradKernel>("gelu_grad", FloatTypes{});
  RegisterKernelForTypeList<SumToLikeKernel>("sum_to_like", NumericTypes{});
  RegisterKernelForTypeList<GatherGradKernel>("gather_grad", NumericTypes{});
  RegisterKernelForTypes<GatherGradAddKernel, float, double>("gather_grad_add");
  RegisterKernelForTypeList<TileGradKernel>("tile_grad", NumericTypes{});
}

}  // namespace
}  // namespace runnel
